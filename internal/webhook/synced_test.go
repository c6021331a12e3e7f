package webhook

import (
	"context"
	"slices"
	"testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// syncing is a cache that holds nothing and has synced once synced is
// closed; until then WaitForCacheSync blocks, as a starting manager's does.
type syncing struct {
	notFound
	synced chan struct{}
}

func (s *syncing) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-s.synced:
		return true
	case <-ctx.Done():
		return false
	}
}

// A review while the caches sync is answered at once, without warnings and
// without a lookup; once they have synced, the missing references are
// warned about.
func TestWarningsWaitForNoSync(t *testing.T) {
	objects := &syncing{synced: make(chan struct{})}
	reader := newSyncedReader(objects)
	v := &Validator{Objects: reader}
	persona := request(v1alpha1.PersonaKind, "p", "kind: Persona\nmetadata: {name: p}\nspec: {inherit: [base]}\n")
	persona.UserInfo.Username = "alice"

	started := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { started <- reader.Start(ctx) }()
	if resp := v.Handle(ctx, persona); !resp.Allowed || len(resp.Warnings) > 0 || objects.gets != 0 {
		t.Errorf("before the sync: %+v after %d lookups, want allowed, no warnings, no lookup", resp, objects.gets)
	}

	close(objects.synced)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	want := []string{`spec.inherit[0]: Persona "base" does not exist yet`}
	if got := v.Handle(ctx, persona).Warnings; !slices.Equal(got, want) || objects.gets != 1 {
		t.Errorf("after the sync: warnings %q after %d lookups, want %q after 1", got, objects.gets, want)
	}
}
