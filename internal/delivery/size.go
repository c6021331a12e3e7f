package delivery

// DataSize is the size of a ConfigMap's data: every key and value.
func DataSize(data map[string]string) int {
	size := 0
	for k, v := range data {
		size += len(k) + len(v)
	}
	return size
}
