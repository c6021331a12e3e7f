// Package modelstub is a model API on 127.0.0.1 (or another address of the
// caller's) for running the real agent CLIs offline: it records every request,
// with the time it arrived, and answers each with the shortest
// valid reply of the API it was sent to (Anthropic Messages, OpenAI
// Responses, OpenAI chat completions), streamed when the request asks for a
// stream. The reply is always the same text, so a run is deterministic.
package modelstub

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Reply is the text every answer carries.
const Reply = "stub reply"

// Request is one request the stub received.
type Request struct {
	// At is when the stub received the request's head.
	At     time.Time
	Method string
	// Host is the host a proxied request was for: set only for a request
	// sent to the stub as a proxy (HTTPS_PROXY), which is one that tried to
	// leave the machine.
	Host   string
	Path   string
	Header http.Header
	Body   []byte
}

// JSON decodes the request's body into v.
func (r Request) JSON(v any) error { return json.Unmarshal(r.Body, v) }

// Server is a running stub.
type Server struct {
	URL string // http://ADDRESS:PORT, no trailing slash

	srv      *http.Server
	mu       sync.Mutex
	requests []Request
}

// Start serves the stub on a free port of 127.0.0.1 until Close.
func Start() (*Server, error) { return StartOn("127.0.0.1:0") }

// StartOn serves the stub on address (host:port, port 0 for a free one)
// until Close: an address that containers reach, for a harness in a pod.
func StartOn(address string) (*Server, error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("model stub: listen on %s: %w", address, err)
	}
	s := &Server{URL: "http://" + ln.Addr().String()}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the stub.
func (s *Server) Close() error { return s.srv.Close() }

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Reset forgets the requests received so far.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(r.Body)
	proxied := r.Method == http.MethodConnect || r.URL.IsAbs()
	host := ""
	if proxied {
		host = r.Host
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{At: at, Method: r.Method, Host: host, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	s.mu.Unlock()
	if proxied {
		http.Error(w, "the model stub is no way out", http.StatusForbidden)
		return
	}

	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 1})
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages"):
		anthropicMessage(w, req.Model, req.Stream)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses"):
		openAIResponse(w, req.Model, req.Stream)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		chatCompletion(w, req.Model, req.Stream)
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		writeJSON(w, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
	default:
		http.Error(w, "the model stub does not serve "+r.Method+" "+r.URL.Path, http.StatusNotFound)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// events writes server-sent events; a named event gets an event: line, as
// the Anthropic and Responses streams have, chat completions' do not.
type events struct{ w http.ResponseWriter }

func startEvents(w http.ResponseWriter) events {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return events{w}
}

func (e events) send(name string, data any) {
	raw, _ := json.Marshal(data)
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", raw)
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

var usage = map[string]any{"input_tokens": 1, "output_tokens": 1}

// anthropicMessage answers POST /v1/messages.
func anthropicMessage(w http.ResponseWriter, model string, stream bool) {
	message := map[string]any{
		"id": "msg_stub", "type": "message", "role": "assistant", "model": model,
		"content":     []any{map[string]any{"type": "text", "text": Reply}},
		"stop_reason": "end_turn", "stop_sequence": nil, "usage": usage,
	}
	if !stream {
		writeJSON(w, message)
		return
	}
	e := startEvents(w)
	start := map[string]any{}
	for k, v := range message {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	e.send("message_start", map[string]any{"type": "message_start", "message": start})
	e.send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "text_delta", "text": Reply}})
	e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	e.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	e.send("message_stop", map[string]any{"type": "message_stop"})
}

// openAIResponse answers POST /v1/responses.
func openAIResponse(w http.ResponseWriter, model string, stream bool) {
	item := map[string]any{
		"type": "message", "id": "msg_stub", "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": Reply, "annotations": []any{}}},
	}
	responseUsage := map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	response := func(status string, output []any) map[string]any {
		r := map[string]any{"id": "resp_stub", "object": "response", "created_at": 0, "status": status,
			"model": model, "output": output}
		if status == "completed" {
			r["usage"] = responseUsage
		}
		return r
	}
	if !stream {
		writeJSON(w, response("completed", []any{item}))
		return
	}
	e := startEvents(w)
	e.send("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": response("in_progress", []any{})})
	e.send("response.output_item.added", map[string]any{"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
		"item": map[string]any{"type": "message", "id": "msg_stub", "status": "in_progress", "role": "assistant", "content": []any{}}})
	e.send("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "sequence_number": 2, "item_id": "msg_stub",
		"output_index": 0, "content_index": 0, "delta": Reply})
	e.send("response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": item})
	e.send("response.completed", map[string]any{"type": "response.completed", "sequence_number": 4, "response": response("completed", []any{item})})
}

// chatCompletion answers POST /v1/chat/completions.
func chatCompletion(w http.ResponseWriter, model string, stream bool) {
	chatUsage := map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
	if !stream {
		writeJSON(w, map[string]any{"id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": Reply}}},
			"usage": chatUsage})
		return
	}
	e := startEvents(w)
	chunk := func(delta map[string]any, finish any, u any) map[string]any {
		c := map[string]any{"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if u != nil {
			c["usage"] = u
		}
		return c
	}
	e.send("", chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil))
	e.send("", chunk(map[string]any{"content": Reply}, nil, nil))
	e.send("", chunk(map[string]any{}, "stop", chatUsage))
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// Responses is what a request of the OpenAI Responses API, as Codex sends
// it, gives the model.
type Responses struct {
	Model, Effort string
	// Instructions are the request's instructions, then the texts of its
	// developer and system messages, in order.
	Instructions []string
}

// ReadResponses reads a Responses API request's body.
func ReadResponses(body []byte) (Responses, error) {
	var req struct {
		Model        string `json:"model"`
		Instructions string `json:"instructions"`
		Reasoning    struct {
			Effort string `json:"effort"`
		} `json:"reasoning"`
		Input []struct {
			Role    string `json:"role"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return Responses{}, err
	}
	r := Responses{Model: req.Model, Effort: req.Reasoning.Effort}
	if req.Instructions != "" {
		r.Instructions = append(r.Instructions, req.Instructions)
	}
	for _, m := range req.Input {
		if m.Role == "developer" || m.Role == "system" {
			for _, c := range m.Content {
				r.Instructions = append(r.Instructions, c.Text)
			}
		}
	}
	return r, nil
}
