package compare

import "html/template"

const htmlStyle = `body{font:14px system-ui,sans-serif;margin:1.5em;color:#222;max-width:90em}
table{border-collapse:collapse;margin:.3em 0 1em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
.bad{color:#b00;font-weight:bold}.good{color:#070;font-weight:bold}
details{margin:.3em 0}summary{cursor:pointer}
table.sides{width:100%;table-layout:fixed}table.sides td{font-family:ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
mark{background:#fd6}pre.diff{background:#f8f8f8;padding:.5em;overflow:auto}
pre.diff .del{background:#fdd}pre.diff .ins{background:#dfd}
.names{font-family:ui-monospace,monospace;font-size:12px}`

var htmlTemplate = template.Must(template.New("compare").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>{{.Style}}</style></head>
<body>
<h1>{{.Title}}</h1>
{{range .Pairs}}<section class="pair" data-a="{{.A}}" data-b="{{.B}}">
<h2>{{.A}} vs {{.B}}</h2>
<table class="counts"><tr><th>requests</th><th>identical</th><th>different</th><th>both failed</th></tr>
<tr><td class="n" data-k="requests">{{.Counts.Requests}}</td><td class="n" data-k="identical">{{.Counts.Identical}}</td><td class="n {{if .Counts.Different}}bad{{else}}good{{end}}" data-k="different">{{.Counts.Different}}</td><td class="n" data-k="both_failed">{{.Counts.BothFailed}}</td></tr></table>
<h3>Per source schema</h3>
<table class="schemas"><tr><th>source schema</th><th>requests</th><th>identical</th><th>different</th><th>both failed</th></tr>
{{range .Schemas}}<tr class="schema" data-schema="{{.Name}}"><td>{{.Name}}</td><td class="n" data-k="requests">{{.Counts.Requests}}</td><td class="n" data-k="identical">{{.Counts.Identical}}</td><td class="n{{if .Counts.Different}} bad{{end}}" data-k="different">{{.Counts.Different}}</td><td class="n" data-k="both_failed">{{.Counts.BothFailed}}</td></tr>
{{end}}</table>
<h3>Requests with a difference, per kind</h3>
<table class="kinds"><tr>{{range .Kinds}}<th>{{.Kind}}</th>{{end}}</tr><tr>{{range .Kinds}}<td class="n" data-kind="{{.Kind}}">{{.Requests}}</td>{{end}}</tr></table>
{{if .Groups}}<h3>Distinct differences</h3>
<table class="groups"><tr><th>kind</th><th>path</th><th>explanation</th><th>requests</th></tr>
{{range .Groups}}<tr class="group"><td>{{.Kind}}</td><td>{{.Path}}</td><td>{{.Explanation}}</td><td class="n" data-k="requests">{{len .Requests}}</td></tr>
{{end}}</table>{{end}}
{{$pair := .}}{{if .Different}}<h3>Differing requests ({{len .Different}})</h3>
{{range .Different}}<details class="result" data-name="{{.Name}}" data-schema="{{.Schema}}"{{if .Open}} open{{end}}><summary><b>{{.Name}}</b> ({{.Schema}}): {{.Kinds}}</summary>
<table class="sides"><tr><th></th><th>{{$pair.A}}</th><th>{{$pair.B}}</th></tr>
<tr><th>answer</th><td>{{if .A.Error}}error: {{.A.Error}}{{else}}{{.A.Status}}, {{.A.BodyBytes}} bytes{{end}}</td><td>{{if .B.Error}}error: {{.B.Error}}{{else}}{{.B.Status}}, {{.B.BodyBytes}} bytes{{end}}</td></tr>
{{range .Differences}}<tr class="difference" data-kind="{{.Kind}}"><th>{{.Kind}}{{with .Path}} {{.}}{{end}}</th><td>{{with .HA}}{{.Pre}}<mark>{{.Mid}}</mark>{{.Post}}{{end}}</td><td>{{with .HB}}{{.Pre}}<mark>{{.Mid}}</mark>{{.Post}}{{end}}</td></tr>
<tr><td></td><td colspan="2">{{.Explanation}}{{if .Lines}}<pre class="diff">(-{{$pair.A}} +{{$pair.B}})
{{range .Lines}}<span class="{{.Class}}">{{.Text}}</span>
{{end}}</pre>{{end}}</td></tr>
{{end}}{{range .Notes}}<tr><th>note</th><td colspan="2">{{.}}</td></tr>{{end}}</table>
</details>
{{end}}{{end}}
<h3>Identical requests</h3>
{{range .Schemas}}<details class="identical" data-schema="{{.Name}}" data-count="{{len .Identical}}"><summary>{{.Name}}: {{len .Identical}} identical</summary>
<p class="names">{{range $i, $n := .Identical}}{{if $i}}, {{end}}{{$n}}{{end}}</p></details>
{{end}}</section>
{{end}}</body></html>
`))
