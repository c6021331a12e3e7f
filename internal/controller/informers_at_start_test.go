package controller

import (
	"os"
	"strconv"
	"testing"

	clientfeatures "k8s.io/client-go/features"
)

func TestListAtStartTurnsOnlyWatchListOff(t *testing.T) {
	base := clientfeatures.FeatureGates()
	t.Cleanup(func() { clientfeatures.ReplaceFeatureGates(base) })
	gates := watchListOff{base}
	if gates.Enabled(clientfeatures.WatchListClient) {
		t.Error("WatchListClient is on with the gates of ListAtStart")
	}
	// InformerResourceVersion is on by default; the others keep their state.
	for _, f := range []clientfeatures.Feature{clientfeatures.InformerResourceVersion, clientfeatures.ClientsAllowCBOR} {
		if got, want := gates.Enabled(f), base.Enabled(f); got != want {
			t.Errorf("%s: %t with the gates of ListAtStart, %t without", f, got, want)
		}
	}
	if _, err := strconv.ParseBool(os.Getenv(listAtStartEnv)); err == nil {
		t.Skipf("%s is set: ListAtStart leaves the gates to it", listAtStartEnv)
	}
	ListAtStart()
	if clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		t.Error("WatchListClient is on after ListAtStart")
	}
}
