// Package agents is the suite of `make test-agents`: it runs the real agent
// CLIs (Claude Code, Codex, opencode; pinned, installed by
// hack/agent-clis.sh) through `kubectl-persona launch` and through the
// by-hand recipes of docs/agents.md, against a model stub on 127.0.0.1
// (modelstub), and checks what reaches the model: the persona's prompt
// verbatim and in order with the final guardrail last, the model, the
// reasoning effort, the harness's built-in instructions kept or replaced as
// harnessPrompt asks, and the repository's AGENTS.md once. The CLIs run
// offline: every request they make goes to the stub, and one that tries to
// leave the machine fails the suite. Without the CLIs (PERSONA_AGENT_CLIS)
// it skips, unless make test-agents asked for it (PERSONA_REQUIRE_AGENTS=1).
package agents
