package image

// The release's images, as the Dockerfile's targets declare them: the manager
// at /manager on a distroless-like base, and kubectl-persona alone at
// /kubectl-persona. release_test.go holds them to the Dockerfile.

// VersionVariable is the variable the build sets to the release's version.
const VersionVariable = "github.com/persona-operator/persona-operator/internal/version.Version"

// GoBuildFlags are the flags of the Dockerfile's go build, beside
// CGO_ENABLED=0, that make image builds the binaries of a version with.
func GoBuildFlags(version string) []string {
	return []string{"-trimpath", "-ldflags=-s -w -X " + VersionVariable + "=" + version}
}

// nonroot is the user both images run as (distroless's nonroot).
const nonroot = "65532:65532"

// Manager is the manager's image: the static binary at /manager, run from /
// as 65532, over the files of distroless's static:nonroot base that a static
// Go binary can use: the users and groups, a home for nonroot and /tmp. The
// manager talks only to the API server, whose CA comes with its
// ServiceAccount, so the base's CA bundle and time zones are left out.
func Manager(binary string) ([]File, Config) {
	files := append(distrolessStatic(), File{Name: "manager", Source: binary, Mode: 0o755})
	return files, Config{
		Entrypoint: []string{"/manager"},
		User:       nonroot,
		WorkingDir: "/",
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
	}
}

// KubectlPersona is the image that holds only /kubectl-persona, for agent
// images to copy it from.
func KubectlPersona(binary string) ([]File, Config) {
	return []File{{Name: "kubectl-persona", Source: binary, Mode: 0o755}}, Config{
		Entrypoint: []string{"/kubectl-persona"},
		User:       nonroot,
	}
}

func distrolessStatic() []File {
	return []File{
		{Name: "etc", Dir: true, Mode: 0o755},
		{Name: "etc/passwd", Mode: 0o644, Data: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
				"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{Name: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n")},
		{Name: "home", Dir: true, Mode: 0o755},
		{Name: "home/nonroot", Dir: true, Mode: 0o700, UID: 65532, GID: 65532},
		{Name: "tmp", Dir: true, Mode: 0o1777},
	}
}
