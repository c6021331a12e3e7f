package controllers

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/test/suite"
)

// A request's headers are read before the webhook's handlers weigh it: the
// manager's servers bound them (internal/serving). With controller-runtime's
// server, 200 such connections took the manager from 61 to 278 MiB, and 480
// past its 512Mi limit.
var _ = Describe("Memory against request headers", func() {
	It("refuses headers past 16 KiB: 200 connections sending a megabyte of headers each, then a body a byte at a time, move its RSS by at most 32 MiB, and a labelled pod is injected within 1 s meanwhile", func() {
		const (
			conns   = 200
			perConn = 1000 << 10
		)
		hook := plane.Env.WebhookInstallOptions
		addr := net.JoinHostPort(hook.LocalServingHost, fmt.Sprint(hook.LocalServingPort))
		ns := newNamespace()
		createPod := func(name string) (time.Duration, error) {
			start := time.Now()
			err := k8s.Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"prompts.persona-operator.dev/persona": "ghost"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "busybox"}}},
			})
			return time.Since(start), err
		}
		_, err := createPod("settle")
		Expect(err).NotTo(HaveOccurred())
		time.Sleep(2 * time.Second)
		before := suite.ManagerRSS()

		line := "X-Pad: " + strings.Repeat("a", 4000) + "\r\n"
		var mu sync.Mutex
		var open []net.Conn
		var wg sync.WaitGroup
		for range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the attacker's client
				if err != nil {
					return
				}
				mu.Lock()
				open = append(open, c)
				mu.Unlock()
				_, _ = fmt.Fprintf(c, "POST /mutate--v1-pod HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 64\r\n")
				for sent := 0; sent+len(line) < perConn; sent += len(line) {
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
				_, _ = c.Write([]byte("\r\n{"))
			}()
		}
		wg.Wait()
		defer func() {
			for _, c := range open {
				_ = c.Close()
			}
		}()
		var peak int64
		start := time.Now()
		for time.Since(start) < 6*time.Second {
			time.Sleep(time.Second)
			for _, c := range open {
				_, _ = c.Write([]byte(" "))
			}
			peak = max(peak, suite.ManagerRSS())
		}
		took, err := createPod("during")
		GinkgoWriter.Printf("manager RSS %.1f MiB before, at most %.1f MiB with %d connections sending a megabyte of headers each; a labelled pod create meanwhile took %v\n",
			float64(before)/(1<<20), float64(peak)/(1<<20), len(open), took.Round(time.Millisecond))
		Expect(err).NotTo(HaveOccurred())
		Expect(took).To(BeNumerically("<", time.Second))
		Expect(peak-before).To(BeNumerically("<=", 32<<20), "the manager's RSS went from %d to %d bytes", before, peak)
	})
})
