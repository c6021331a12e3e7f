// Package serving builds the manager's HTTP servers, the webhooks', the
// metrics' and the probes', each bounded in what a client may hold before
// any handler runs: the header bytes of a request, the time to send it
// whole, and the connections open at once, in total and from one address.
// The handlers bound what a request's body may take (the webhooks' lanes);
// these bound what comes before it. Without them a client that opens
// hundreds of connections, each with a megabyte of headers and a body sent
// a byte at a time, holds the manager's memory past its limit, and every
// webhook fails closed while it restarts.
package serving
