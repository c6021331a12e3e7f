// Package fairshare shares a limited resource between namespaces: while
// several contend, each is held to its share of the limit, and what none
// under its share can take goes round to the others. The restarts' waves
// (internal/waves) and the Persona controller's render gate (Gate) share
// this rule. It holds no client.
package fairshare

// Share is each contender's share of limit while n contend: limit / n, at
// least 1; the whole limit when there is one contender or none.
func Share(limit, n int) int {
	if n <= 1 {
		return limit
	}
	return max(1, limit/n)
}
