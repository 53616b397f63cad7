// Package compare is a differential harness for the two paths of package
// transport: it sends one corpus of source schema requests through two
// Invokers, one after the other for each request, against the same source
// schemas, and reports for every request how the two answers differ.
//
// A corpus is JSONL (see Request and ReadCorpus). Run sends it and returns a
// Report; Report.Write prints one line per request and, under each request
// whose answers differ, one line per answer.Difference with a one-sentence
// explanation that names both sides:
//
//	ok   accounts/users
//	DIFF reviews/top
//	     redirect: legacy followed a 307 to /v2 and got a 200; sockets returned the 307
//	2 requests: 1 identical, 1 different
//
// What counts as a difference, and what does not (Date, hop-by-hop headers,
// the order of JSON object keys, transparent decompression), is described on
// Run. Rules add to it: headers and JSON paths left out (such as
// extensions.tracing), a Comparator per source schema, timing, and header
// names whose values are redacted. Authorization, Cookie, Set-Cookie and
// Proxy-Authorization values are always redacted: they never appear in an
// answer.Difference, a Report or its text, JSON and JUnit forms.
//
// # One pair at a time
//
// Shadow mode (package shadow) compares live answers one request at a
// time. Its default comparison needs no rules; ShadowComparer compares by
// Rules instead. Outside shadow mode, Capture turns each side's response
// into an answer.Answer, and Compare classifies the differences. compare
// imports package shadow, never the reverse: an importer of package
// transport does not link this harness. Both speak package answer's
// vocabulary (answer.Answer, answer.Difference, answer.Kind,
// answer.Sender, answer.Redacted), so their differences are the same
// values with the same JSON form.
//
// # Recording a corpus
//
// A Recorder is a RoundTripper middleware that samples a source schema's
// requests in production into the JSONL corpus that ReadCorpus reads, with
// redaction, a body size cap and file rotation.
//
// # In CI
//
// Report.Groups gathers identical differences across requests;
// Report.WriteJUnit and Report.WriteJSON write the forms CI systems read
// (WriteJUnitReports, several reports in one JUnit document);
// ParseFailOn reads the thresholds that decide whether a report fails. The
// fusion-transport compare command puts them together; docs/rollout.md
// walks through it.
package compare
