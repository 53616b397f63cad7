// Package answer holds the vocabulary that package compare (the
// differential harness) and package shadow (shadow mode on live traffic)
// share: what one path answered to a source schema request (Answer, with
// the Redirects it followed), how two such answers differ (Difference, of a
// Kind), what a path must do to be compared (Sender) and what stands in for
// a sensitive header's value (Redacted).
//
// Both packages use these types as they are, so a shadow.Comparer built by
// compare.ShadowComparer hands its differences to a shadow.Publisher
// unchanged, and a Difference encodes to the same JSON wherever it is
// published. The package is a leaf: it needs nothing outside the standard
// library, and it compares nothing itself.
package answer
