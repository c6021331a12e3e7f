package persona

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
	corev1 "k8s.io/api/core/v1"
)

// packedData is a ConfigMap's data as the deferred statuses hold it between
// a delivery and its status pass: the data's protobuf encoding, which keeps
// every byte of every value, compressed with zstd. A rendered prompt repeats
// itself across its keys (the bundle carries the templates the system
// prompts were rendered from), so it packs to about a quarter of its size,
// and the same bound on what is held covers four times the Personas.
type packedData []byte

var (
	// Only EncodeAll and DecodeAll are used, which are safe for concurrent use.
	dataEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err) // the options are constants
		}
		return e
	})
	dataDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
		if err != nil {
			panic(err)
		}
		return d
	})
	// packScratch holds the encodings, whose size is the data's, between
	// packs: only the packed bytes are kept.
	packScratch = sync.Pool{New: func() any { return new(scratch) }}
)

type scratch struct{ encoded, packed []byte }

// packData packs data.
func packData(data map[string]string) (packedData, error) {
	s := packScratch.Get().(*scratch)
	defer packScratch.Put(s)
	cm := corev1.ConfigMap{Data: data}
	size := cm.Size()
	if cap(s.encoded) < size {
		s.encoded = make([]byte, size)
	}
	n, err := cm.MarshalToSizedBuffer(s.encoded[:size])
	if err != nil {
		return nil, fmt.Errorf("encode the data: %w", err)
	}
	s.packed = dataEncoder().EncodeAll(s.encoded[size-n:size], s.packed[:0])
	return bytes.Clone(s.packed), nil
}

// unpack is the data p was packed from.
func (p packedData) unpack() (map[string]string, error) {
	s := packScratch.Get().(*scratch)
	defer packScratch.Put(s)
	encoded, err := dataDecoder().DecodeAll(p, s.encoded[:0])
	if err != nil {
		return nil, fmt.Errorf("decompress the data: %w", err)
	}
	s.encoded = encoded
	var cm corev1.ConfigMap
	if err := cm.Unmarshal(encoded); err != nil {
		return nil, fmt.Errorf("decode the data: %w", err)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	return cm.Data, nil
}
