// Package fairshare shares a limited resource between namespaces: while
// several contend, each is held to its share of the limit, and what none
// under its share can take goes round to the others. The restarts' waves
// (internal/waves) and the Persona controller's render gate (Gate) share
// this rule. It holds no client.
package fairshare

import "slices"

// Share is each contender's share of limit while n contend: limit / n, at
// least 1; the whole limit when there is one contender or none.
func Share(limit, n int) int {
	if n <= 1 {
		return limit
	}
	return max(1, limit/n)
}

// Leave takes ns out of ring, the namespaces served in turn, and returns
// the ring and the cursor next, kept on the namespace that was next.
func Leave(ring []string, next int, ns string) ([]string, int) {
	at := slices.Index(ring, ns)
	if at < 0 {
		return ring, next
	}
	ring = slices.Delete(ring, at, at+1)
	if at < next {
		next--
	}
	if len(ring) == 0 {
		return ring, 0
	}
	return ring, next % len(ring)
}
