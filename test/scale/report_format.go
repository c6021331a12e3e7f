package main

import (
	"fmt"
	"math"
	"time"
)

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func signedMs(d time.Duration) string {
	return fmt.Sprintf("%+.1f ms", float64(d)/float64(time.Millisecond))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func msF(seconds float64) string {
	if math.IsNaN(seconds) {
		return "—"
	}
	return ms(time.Duration(seconds * float64(time.Second)))
}

func mib(bytes int64) string { return fmt.Sprintf("%.0f MiB", float64(bytes)/(1<<20)) }

func kib(bytes float64) string { return fmt.Sprintf("%.1f KiB", bytes/(1<<10)) }

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}
