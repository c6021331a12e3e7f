package image

import (
	"archive/tar"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// stage is what a Dockerfile target declares about the image it makes.
type stage struct {
	base       string
	user       string
	entrypoint []string
	workdir    string
	env        []string
	copied     []string // the paths in the image that COPY writes
	builds     []string // the RUN commands of the stages it copies from
}

func dockerfileStages(t *testing.T) map[string]stage {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	parsed, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string][]string{}
	stages := map[string]stage{}
	for _, st := range parsed {
		s := stage{base: st.BaseName, workdir: ""}
		for _, cmd := range st.Commands {
			switch c := cmd.(type) {
			case *instructions.RunCommand:
				runs[st.Name] = append(runs[st.Name], strings.Join(c.CmdLine, " "))
			case *instructions.UserCommand:
				s.user = c.User
			case *instructions.EntrypointCommand:
				if c.PrependShell {
					t.Fatalf("stage %s: ENTRYPOINT in shell form needs a shell, which the images do not have", st.Name)
				}
				s.entrypoint = c.CmdLine
			case *instructions.WorkdirCommand:
				s.workdir = path.Join("/", s.workdir, c.Path)
			case *instructions.EnvCommand:
				for _, kv := range c.Env {
					s.env = append(s.env, kv.Key+"="+kv.Value)
				}
			case *instructions.CopyCommand:
				for _, src := range c.SourcePaths {
					dest := c.DestPath
					if dest == "." || strings.HasSuffix(dest, "/") {
						dest = path.Join(dest, path.Base(src))
					}
					s.copied = append(s.copied, path.Join("/", s.workdir, dest))
				}
				s.builds = append(s.builds, runs[c.From]...)
			}
		}
		stages[st.Name] = s
	}
	return stages
}

// TestReleaseImagesAsTheDockerfileDeclares holds make image's two images to
// the Dockerfile's targets of the same name: user, entrypoint, working
// directory, environment, where the binary is, its build flags and the base.
func TestReleaseImagesAsTheDockerfileDeclares(t *testing.T) {
	stages := dockerfileStages(t)
	binary := filepath.Join(t.TempDir(), "binary")
	if err := os.WriteFile(binary, []byte("#!binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	for target, spec := range map[string]func(string) ([]File, Config){
		"manager":         Manager,
		"kubectl-persona": KubectlPersona,
	} {
		t.Run(target, func(t *testing.T) {
			declared, ok := stages[target]
			if !ok {
				t.Fatalf("the Dockerfile has no target %s", target)
			}
			files, config := spec(binary)
			if config.User != declared.user {
				t.Errorf("user %q, the Dockerfile's %q", config.User, declared.user)
			}
			if !slices.Equal(config.Entrypoint, declared.entrypoint) {
				t.Errorf("entrypoint %q, the Dockerfile's %q", config.Entrypoint, declared.entrypoint)
			}
			if config.WorkingDir != declared.workdir {
				t.Errorf("working directory %q, the Dockerfile's %q", config.WorkingDir, declared.workdir)
			}
			for _, kv := range declared.env {
				if !slices.Contains(config.Env, kv) {
					t.Errorf("the Dockerfile sets %s, the image does not", kv)
				}
			}
			img, err := Build(files, config, "amd64")
			if err != nil {
				t.Fatal(err)
			}
			entries := layerEntries(t, img)
			if len(declared.copied) != 1 || declared.copied[0] != config.Entrypoint[0] {
				t.Fatalf("the Dockerfile copies %q, the entrypoint runs %q", declared.copied, config.Entrypoint)
			}
			bin, ok := entries[strings.TrimPrefix(declared.copied[0], "/")]
			if !ok || bin.Mode != 0o755 || bin.Typeflag != tar.TypeReg {
				t.Errorf("%s is not an executable file of the image: %+v", declared.copied[0], bin)
			}
			for _, run := range declared.builds {
				for _, flag := range append([]string{"CGO_ENABLED=0"}, GoBuildFlags("${VERSION}")...) {
					if !strings.Contains(strings.ReplaceAll(run, `"`, ""), flag) {
						t.Errorf("the Dockerfile's build %q lacks %s, which make image uses", run, flag)
					}
				}
			}
			if len(declared.builds) == 0 {
				t.Error("the Dockerfile builds no binary for this target")
			}
			switch declared.base {
			case "scratch":
				if len(entries) != 1 {
					t.Errorf("on scratch the image holds only its binary, not %d entries", len(entries))
				}
			case "gcr.io/distroless/static:nonroot":
				uid, gid, _ := strings.Cut(config.User, ":")
				passwd := string(entries["etc/passwd"].data)
				if !strings.Contains(passwd, ":x:"+uid+":"+gid+":nonroot:/home/nonroot:") {
					t.Errorf("/etc/passwd names no nonroot %s: %q", config.User, passwd)
				}
				if tmp := entries["tmp/"]; tmp.Typeflag != tar.TypeDir || tmp.Mode != 0o1777 {
					t.Errorf("/tmp is not a world-writable sticky directory: %+v", tmp)
				}
			default:
				t.Errorf("the Dockerfile's base %q is not one make image knows", declared.base)
			}
		})
	}
}

type entry struct {
	*tar.Header
	data []byte
}

func layerEntries(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("the image has %d layers (%v), not one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	entries := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries[hdr.Name] = entry{hdr, data}
	}
}
