package controller

import (
	"context"
	"os"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	toolscache "k8s.io/client-go/tools/cache"
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

// An informer of pagedFirstLists asks for its first list at no
// resourceVersion in pages, follows the pages to the end, and fills its
// store with every page's objects; its watch starts at the list's version.
func TestPagedFirstListsListsInPages(t *testing.T) {
	base := clientfeatures.FeatureGates()
	t.Cleanup(func() { clientfeatures.ReplaceFeatureGates(base) })
	clientfeatures.ReplaceFeatureGates(watchListOff{base})

	var mu sync.Mutex
	var lists []metav1.ListOptions
	watchedFrom := make(chan string, 1)
	page := func(names ...string) *corev1.ConfigMapList {
		l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}}
		for _, n := range names {
			l.Items = append(l.Items, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n, ResourceVersion: "7"}})
		}
		return l
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			mu.Lock()
			lists = append(lists, opts)
			mu.Unlock()
			if opts.Continue == "" {
				l := page("a", "b")
				l.Continue = "next"
				return l, nil
			}
			return page("c"), nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			select {
			case watchedFrom <- opts.ResourceVersion:
			default:
			}
			return watch.NewFake(), nil
		},
	}
	informer := pagedFirstLists(nil)(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go informer.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("the informer never synced")
	}
	if got := informer.GetStore().ListKeys(); !reflect.DeepEqual(sorted(got), []string{"ns/a", "ns/b", "ns/c"}) {
		t.Errorf("the store holds %v, want every page's objects", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lists) != 2 {
		t.Fatalf("%d lists, want the first page and the next: %+v", len(lists), lists)
	}
	for i, opts := range lists {
		if opts.ResourceVersion != "" || opts.Limit != firstListPageSize {
			t.Errorf("list %d at resourceVersion %q with limit %d, want no resourceVersion and a limit of %d", i, opts.ResourceVersion, opts.Limit, firstListPageSize)
		}
	}
	if lists[1].Continue != "next" {
		t.Errorf("the second list continues from %q, want the first page's token", lists[1].Continue)
	}
	if rv := <-watchedFrom; rv != "42" {
		t.Errorf("the watch starts at %q, want the list's version 42", rv)
	}
}

// A list at a resourceVersion, or without a limit, goes as it was asked.
func TestPagedFirstListsLeavesOtherListsAsTheyAre(t *testing.T) {
	for _, asked := range []metav1.ListOptions{{ResourceVersion: "0"}, {ResourceVersion: "42", Limit: 500}, {ResourceVersion: "", Limit: 500}, {Continue: "next"}} {
		var got metav1.ListOptions
		lw := &toolscache.ListWatch{ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			got = opts
			return &corev1.ConfigMapList{}, nil
		}}
		var passed toolscache.ListerWatcher
		pagedFirstLists(func(lw toolscache.ListerWatcher, _ runtime.Object, _ time.Duration, _ toolscache.Indexers) toolscache.SharedIndexInformer {
			passed = lw
			return nil
		})(lw, &corev1.ConfigMap{}, 0, nil)
		if _, err := passed.(toolscache.ListerWithContext).ListWithContext(t.Context(), asked); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, asked) {
			t.Errorf("asked %+v, listed %+v", asked, got)
		}
	}
}

func sorted(s []string) []string { slices.Sort(s); return s }
