package persona

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
	corev1 "k8s.io/api/core/v1"
)

// packedData is a ConfigMap's data as the deferred statuses hold it between
// a delivery and its status pass: the data's protobuf encoding, which keeps
// every byte of every value, compressed with S2. A rendered prompt repeats
// itself across its keys (the bundle carries the templates the system
// prompts were rendered from), so it packs to under a third of its size,
// and the same bound on what is held covers three times the Personas. S2
// packs it in a quarter of the time of zstd's fastest level, whose packs
// are a quarter smaller: a delivery packs on the fan-out's path, while a
// status pass past the bound reads its data back after the deliveries.
type packedData []byte

// packScratch holds the encodings, whose size is the data's, between
// packs: only the packed bytes are kept.
var packScratch = sync.Pool{New: func() any { return new(scratch) }}

type scratch struct{ encoded, packed []byte }

// maxUnpackedBytes bounds what a pack may claim to unpack to: the room of
// all the data held (deferredDataBytes), far more than any ConfigMap's
// data (the API server stores objects of up to 1.5 MiB). A header that
// claims more is corrupt, and is refused before its room is allocated.
const maxUnpackedBytes = deferredDataBytes

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
	encoded := s.encoded[size-n : size]
	if need := s2.MaxEncodedLen(len(encoded)); cap(s.packed) < need {
		s.packed = make([]byte, need)
	}
	packed := s2.Encode(s.packed[:cap(s.packed)], encoded)
	// Only the packed bytes are kept, in a slice of their own length.
	return append(packedData(nil), packed...), nil
}

// unpack is the data p was packed from.
func (p packedData) unpack() (map[string]string, error) {
	s := packScratch.Get().(*scratch)
	defer packScratch.Put(s)
	size, err := s2.DecodedLen(p)
	if err != nil {
		return nil, fmt.Errorf("decompress the data: %w", err)
	}
	if size > maxUnpackedBytes {
		return nil, fmt.Errorf("decompress the data: it claims %d bytes, more than all the data held may", size)
	}
	if cap(s.encoded) < size {
		s.encoded = make([]byte, size)
	}
	encoded, err := s2.Decode(s.encoded[:size], p)
	if err != nil {
		return nil, fmt.Errorf("decompress the data: %w", err)
	}
	var cm corev1.ConfigMap
	if err := cm.Unmarshal(encoded); err != nil {
		return nil, fmt.Errorf("decode the data: %w", err)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	return cm.Data, nil
}
