package render

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/sprig/v3"
)

// undefinedFunction matches text/template's parse error for a call of a
// function the set does not have.
var undefinedFunction = regexp.MustCompile(`function "([^"]+)" not defined`)

// withParseHint adds to a parse error what to write instead, when the
// error is one a template author meets by habit: a GitHub Actions
// expression, ${{ github.sha }}, in text such as an AGENTS.md, or a Sprig
// function this set leaves out on purpose.
func withParseHint(err error, src string) error {
	m := undefinedFunction.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	if strings.Contains(src, "${{") {
		return fmt.Errorf("%w; {{ starts a template action, so to keep a GitHub Actions expression such as ${{ github.sha }} as text, "+
			`write its braces as a string: ${{ "{{" }} github.sha }}`, err)
	}
	if note := leftOutNote(m[1]); note != "" {
		return fmt.Errorf("%w; %s", err, note)
	}
	return err
}

// leftOutNote says why a Sprig function is not in the set, and what to use
// instead; "" for a name that is no Sprig function.
func leftOutNote(name string) string {
	if _, sprigs := sprig.TxtFuncMap()[name]; !sprigs {
		return ""
	}
	if _, ok := publicFuncNames()[name]; ok {
		return ""
	}
	lower := strings.ToLower(name)
	switch {
	case strings.Contains(lower, "date") || name == "now" || name == "ago" || name == "unixEpoch" || strings.HasPrefix(name, "duration"):
		return "the date and time functions are left out on purpose, so that a render gives the same bytes on every run; " +
			`pass a date the prompt needs in spec.vars and read it with {{ index .Vars "date" }}`
	case strings.HasPrefix(name, "rand") || name == "uuidv4" || name == "shuffle":
		return "the random functions are left out on purpose, so that a render gives the same bytes on every run"
	case name == "env" || name == "expandenv" || name == "getHostByName":
		return "env, expandenv and getHostByName are left out on purpose: a render reads nothing but its inputs; " +
			`pass the value in spec.vars and read it with {{ index .Vars "name" }}`
	case strings.HasPrefix(name, "os"):
		return "the os path functions are left out on purpose, as their results depend on the platform; " +
			"base, dir, clean, ext and isAbs work with forward slashes on every platform"
	}
	return "the cryptographic, hashing and key-generation functions are left out on purpose: a prompt needs none, " +
		"and they cost work no template budget bounds"
}
