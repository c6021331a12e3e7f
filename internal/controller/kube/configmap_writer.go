package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// ConfigMapWrites creates and updates ConfigMaps whole, answering with the
// resourceVersion written (ConfigMapWriter against the API server).
type ConfigMapWrites interface {
	Create(ctx context.Context, cm *corev1.ConfigMap) (string, error)
	Update(ctx context.Context, cm *corev1.ConfigMap) (string, error)
}

// ConfigMapWriter creates and updates the Personas' ConfigMaps. The
// controller reads only the new resourceVersion back from a write, so it
// asks the API server to answer with the ConfigMap's metadata only:
// otherwise every write of a fan-out would make the API server encode, and
// the manager decode, the whole rendered prompt once more. Requests are
// encoded as protobuf in buffers that are reused, and sent as a copy of
// exactly their size: the HTTP transport may read a request's body after
// the request returns.
type ConfigMapWriter struct {
	rest    rest.Interface
	encoder runtime.EncoderWithAllocator
	buffers sync.Pool
}

// The body's media type, and the answer asked for: the metadata of the
// object written.
const (
	configMapContentType = runtime.ContentTypeProtobuf
	metadataOnlyAccept   = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1," +
		"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
)

// encodeBuffer is what one write encodes into.
type encodeBuffer struct {
	body  bytes.Buffer
	alloc runtime.Allocator
}

// NewConfigMapWriter writes through httpClient, with cfg's server and credentials.
func NewConfigMapWriter(cfg *rest.Config, httpClient *http.Client) (*ConfigMapWriter, error) {
	// It encodes ConfigMaps and decodes meta.k8s.io's PartialObjectMetadata.
	scheme := runtime.NewScheme()
	if err := errors.Join(corev1.AddToScheme(scheme), metav1.AddMetaToScheme(scheme)); err != nil {
		return nil, fmt.Errorf("the ConfigMap writer's scheme: %w", err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), configMapContentType)
	if !ok {
		return nil, fmt.Errorf("no serializer for %s", configMapContentType)
	}
	encoder, ok := codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).(runtime.EncoderWithAllocator)
	if !ok {
		return nil, fmt.Errorf("the %s encoder cannot reuse its buffers", configMapContentType)
	}
	rc, err := apiutil.RESTClientForGVK(corev1.SchemeGroupVersion.WithKind("ConfigMap"), false, false, cfg, codecs, httpClient)
	if err != nil {
		return nil, fmt.Errorf("REST client for ConfigMaps: %w", err)
	}
	return &ConfigMapWriter{rest: rc, encoder: encoder, buffers: sync.Pool{New: func() any { return new(encodeBuffer) }}}, nil
}

// Create creates cm and returns its resourceVersion; an error is the API
// server's, as apierrors reads it.
func (w *ConfigMapWriter) Create(ctx context.Context, cm *corev1.ConfigMap) (string, error) {
	return w.write(ctx, w.rest.Post().Namespace(cm.Namespace).Resource("configmaps"), cm)
}

// Update replaces cm, at its resourceVersion, and returns the new one.
func (w *ConfigMapWriter) Update(ctx context.Context, cm *corev1.ConfigMap) (string, error) {
	return w.write(ctx, w.rest.Put().Namespace(cm.Namespace).Resource("configmaps").Name(cm.Name), cm)
}

func (w *ConfigMapWriter) write(ctx context.Context, req *rest.Request, cm *corev1.ConfigMap) (string, error) {
	buf := w.buffers.Get().(*encodeBuffer)
	defer func() {
		buf.body.Reset()
		w.buffers.Put(buf)
	}()
	if err := w.encoder.EncodeWithAllocator(cm, &buf.body, &buf.alloc); err != nil {
		return "", fmt.Errorf("encode ConfigMap %s: %w", cm.Name, err)
	}
	var answer metav1.PartialObjectMetadata
	err := req.SetHeader("Content-Type", configMapContentType).SetHeader("Accept", metadataOnlyAccept).
		Body(bytes.Clone(buf.body.Bytes())).Do(ctx).Into(&answer)
	if err != nil {
		return "", err
	}
	if answer.ResourceVersion == "" {
		return "", fmt.Errorf("the answer to the write of ConfigMap %s has no resourceVersion", cm.Name)
	}
	return answer.ResourceVersion, nil
}
