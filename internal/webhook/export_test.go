package webhook

// PodBytesWeight is what a byte of pod review weighs before it is read,
// for the specs that size reviews to the bound.
const PodBytesWeight = podBytesWeight
