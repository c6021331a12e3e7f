package render

import "sync"

// parseCache holds parsed templates by name and source, so a re-render
// never re-parses. It keeps two generations and drops the older one when the
// newer holds maxCacheBytes by estimateSize, so what it keeps is bounded by
// the memory of its parse trees rather than by the length of its sources.
type parseCache struct {
	limits    *Limits
	mu        sync.RWMutex
	current   map[cacheKey]*parsed
	previous  map[cacheKey]*parsed
	currBytes int
	// parses counts parses, for tests.
	parses int
}

// maxCacheBytes bounds the estimated memory of one generation, so the
// cache keeps at most twice this: a few thousand typical templates, or
// a dozen 64 KiB sources of the densest kind.
const maxCacheBytes = 32 << 20

func newParseCache(l *Limits) *parseCache {
	return &parseCache{limits: l, current: map[cacheKey]*parsed{}}
}

type cacheKey struct {
	kind SectionKind
	name string
	src  string
}

// get returns src parsed under its section name. A source in the current
// generation costs a read lock; one in the previous generation is promoted
// to the current one rather than parsed again.
func (c *parseCache) get(kind SectionKind, name, src string) *parsed {
	k := cacheKey{kind, name, src}
	c.mu.RLock()
	p := c.current[k]
	c.mu.RUnlock()
	if p != nil {
		return p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p = c.current[k]; p != nil {
		return p
	}
	if p = c.previous[k]; p == nil {
		p = parseTemplate(SectionName(kind, name), src, c.limits)
		p.origin = layerOrigin(kind, name)
		p.size += len(p.origin)
		c.parses++
	}
	if c.currBytes+p.size > maxCacheBytes {
		c.previous, c.current, c.currBytes = c.current, map[cacheKey]*parsed{}, 0
	}
	c.current[k] = p
	c.currBytes += p.size
	return p
}

// peek returns src parsed when either generation holds it, and nil
// otherwise, without changing the cache.
func (c *parseCache) peek(kind SectionKind, name, src string) *parsed {
	k := cacheKey{kind, name, src}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if p := c.current[k]; p != nil {
		return p
	}
	return c.previous[k]
}

// layerOrigin is the origin of the pieces of a layer of kind, or empty for
// the other kinds, whose origin the bundle tells.
func layerOrigin(kind SectionKind, name string) string {
	switch kind {
	case KindLayer:
		return "layer/" + name
	case KindClusterLayer:
		return "clusterlayer/" + name
	}
	return ""
}
