package controllers

import (
	"path/filepath"

	. "github.com/onsi/gomega"

	"github.com/persona-operator/persona-operator/test/fixtures"
	"github.com/persona-operator/persona-operator/test/suite"
)

// The specs' steps on the cluster (test/suite) and the manifests they
// apply (test/fixtures), which the webhook's and the CLI's suites share,
// by the short names the specs use.
var (
	newNamespace    = suite.NewNamespace
	objects         = suite.Objects
	apply           = suite.Apply
	tryApply        = suite.TryApply
	createOrUpdate  = suite.CreateOrUpdate
	getPersona      = suite.GetPersona
	ready           = suite.Ready
	condition       = suite.Condition
	readyMessage    = suite.ReadyMessage
	configMap       = suite.ConfigMap
	prompt          = suite.Prompt
	resourceVersion = suite.ResourceVersion

	barePersona           = fixtures.BarePersona
	bareManifest          = fixtures.BareManifest
	layerManifest         = fixtures.LayerManifest
	agentsLayer           = fixtures.AgentsLayer
	unlabelledAgentsLayer = fixtures.UnlabelledAgentsLayer
)

type extension = fixtures.Extension

// inRepo is the path of rel in the repository, whatever the working
// directory's depth.
func inRepo(rel ...string) string {
	root, err := suite.Root()
	Expect(err).NotTo(HaveOccurred())
	return filepath.Join(append([]string{root}, rel...)...)
}
