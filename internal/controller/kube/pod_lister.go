package kube

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodMetadataReader lists pods' metadata from the API server through
// client-go's metadata client of pods. controller-runtime's metadata client
// looks the kind's REST mapping up at every call, about 14 KB of garbage a
// list, which a fan-out's prunes would pay for each Persona.
type PodMetadataReader struct {
	pods metadata.Getter
}

// NewPodMetadataReader reads through httpClient, with cfg's server and
// credentials.
func NewPodMetadataReader(cfg *rest.Config, httpClient *http.Client) (*PodMetadataReader, error) {
	c, err := metadata.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	return &PodMetadataReader{pods: c.Resource(corev1.SchemeGroupVersion.WithResource("pods"))}, nil
}

// Get is not supported: the reader only lists.
func (r *PodMetadataReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return fmt.Errorf("the pods' metadata reader only lists")
}

// List lists the pods' metadata that opts select (namespace, labels,
// fields, limit and continue) into list, which must be PodMetadataList's
// kind.
func (r *PodMetadataReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	out, ok := list.(*metav1.PartialObjectMetadataList)
	if want := PodMetadataList().GroupVersionKind(); !ok || out.GroupVersionKind() != want {
		return fmt.Errorf("the pods' metadata reader lists into a PartialObjectMetadataList of %s, not a %T of %s", want, list, list.GetObjectKind().GroupVersionKind())
	}
	o := (&client.ListOptions{}).ApplyOptions(opts)
	got, err := r.pods.Namespace(o.Namespace).List(ctx, *o.AsListOptions())
	if err != nil {
		return err
	}
	gvk := out.GroupVersionKind()
	*out = *got
	out.SetGroupVersionKind(gvk)
	return nil
}
