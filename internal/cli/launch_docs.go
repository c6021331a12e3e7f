package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/persona-operator/persona-operator/internal/render"
)

// projectDocNames are the repository instruction files each harness reads
// by itself from the working directory and the directories above it, up to
// the repository's root (Claude Code reads AGENTS.md when a directory has no
// CLAUDE.md, and CLAUDE.md often imports it).
var projectDocNames = map[string][]string{
	harnessClaude:   {"CLAUDE.md", "CLAUDE.local.md", filepath.Join(".claude", "CLAUDE.md"), "AGENTS.md"},
	harnessCodex:    {"AGENTS.override.md", "AGENTS.md"},
	harnessOpencode: {"AGENTS.md", "CLAUDE.md", "CONTEXT.md"},
}

// projectDocsSwitch is how each harness is told to read none of them.
var projectDocsSwitch = map[string]string{
	harnessClaude:   "CLAUDE_CODE_DISABLE_CLAUDE_MDS=1",
	harnessCodex:    "-c project_doc_max_bytes=0",
	harnessOpencode: "OPENCODE_DISABLE_PROJECT_CONFIG=1",
}

// projectDocsDecision is whether the harness reads the repository's
// instruction files, and why, for the log.
type projectDocsDecision struct {
	skip bool
	note string
}

// projectDocsInPrompt decides, for --project-docs mode, whether harness may
// read the repository's instruction files from dir: with auto, not when
// prompt (what launch passes) already holds the text of one of them, as a
// layer whose template is the repository's AGENTS.md (templateFrom) puts it
// there. The harness then reads none of them, so the model gets the file
// once, in its place in the prompt.
func projectDocsInPrompt(mode, harness, dir, prompt string) (projectDocsDecision, error) {
	off := projectDocsSwitch[harness]
	switch mode {
	case projectDocsLoad:
		return projectDocsDecision{note: "project docs: the harness reads the repository's instruction files (--project-docs load)"}, nil
	case projectDocsSkip:
		return projectDocsDecision{skip: true, note: "project docs: the harness reads none (--project-docs skip): " + off}, nil
	}
	docs, err := findProjectDocs(projectDocNames[harness], dir)
	if err != nil {
		return projectDocsDecision{}, err
	}
	var found []string
	for _, d := range docs {
		text := render.Normalize(d.text)
		if text != "" && strings.Contains(prompt, text) {
			return projectDocsDecision{skip: true, note: fmt.Sprintf("project docs: the prompt holds %s, so the harness reads none: %s", d.path, off)}, nil
		}
		found = append(found, d.path)
	}
	if len(found) == 0 {
		return projectDocsDecision{note: "project docs: none in " + dir}, nil
	}
	return projectDocsDecision{note: "project docs: the harness reads them, the prompt holds none: " + strings.Join(found, ", ")}, nil
}

type projectDoc struct{ path, text string }

// findProjectDocs reads the files of names in dir and each directory above
// it up to the repository's root, the nearest that holds .git; outside a
// repository, in dir alone.
func findProjectDocs(names []string, dir string) ([]projectDoc, error) {
	dirs := []string{dir}
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			dirs = dirs[:1] // no repository
			break
		}
		d = parent
		dirs = append(dirs, d)
	}
	var docs []projectDoc
	for _, d := range dirs {
		for _, name := range names {
			path := filepath.Join(d, name)
			if !fileExists(path) {
				continue
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("read the repository's instruction file: %w", err)
			}
			docs = append(docs, projectDoc{path: path, text: string(raw)})
		}
	}
	return docs, nil
}
