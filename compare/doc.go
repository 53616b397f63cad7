// Package compare is a differential harness for the two paths of package
// transport: it sends one corpus of source schema requests through two
// Invokers, one after the other for each request, against the same source
// schemas, and reports for every request how the two answers differ.
//
// A corpus is JSONL (see Request and ReadCorpus). Run sends it and returns a
// Report; Report.Write prints one line per request and, under each request
// whose answers differ, one line per Difference with a one-sentence
// explanation that names both sides:
//
//	ok   accounts/users
//	DIFF reviews/top
//	     redirect: legacy followed a 307 to /v2 and got a 200; sockets returned the 307
//	2 requests: 1 identical, 1 different
//
// What counts as a difference, and what does not (Date, hop-by-hop headers,
// the order of JSON object keys, transparent decompression), is described on
// Run.
package compare
