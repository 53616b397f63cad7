package benchrun

import (
	"html/template"
	"strconv"
)

const benchStyle = `body{font:14px system-ui,sans-serif;margin:1.5em;color:#222;max-width:80em}
table{border-collapse:collapse;margin:.3em 0 1em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#f3f3f3}.met{color:#070;font-weight:bold}.missed{color:#b00;font-weight:bold}
svg{background:#fff;border:1px solid #ddd;margin:.3em .6em .3em 0}svg text{font:11px system-ui,sans-serif;fill:#333}
.grid{stroke:#eee}.axis{stroke:#999}.charts{display:flex;flex-wrap:wrap}.key span{display:inline-block;width:1em;height:.6em;margin:0 .3em 0 1em}`

// g formats a number exactly, for data attributes.
func g(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

var benchTemplate = template.Must(template.New("bench").Funcs(template.FuncMap{"g": g, "px": px}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>fusion-transport bench {{.Date.Format "2006-01-02 15:04"}}</title>
<style>{{.Style}}</style></head>
<body>
<h1>Gateway benchmark</h1>
<table class="run">
<tr><th>date</th><td>{{.Date.Format "2006-01-02 15:04 MST"}}</td></tr>
<tr><th>command</th><td id="command"><code>{{.Command}}</code></td></tr>
<tr><th>machine</th><td id="machine">{{.Machine.CPUs}} CPUs{{with .Machine.CPUModel}} ({{.}}){{end}}, {{.Machine.GoVersion}} {{.Machine.OS}}/{{.Machine.Arch}}, load average {{printf "%.1f" .Machine.LoadStart}} at the start, {{printf "%.1f" .Machine.LoadEnd}} at the end</td></tr>
{{if .Subgraphs}}<tr><th>source schemas</th><td id="subgraphs">{{.Subgraphs.Describe}}</td></tr>{{end}}
<tr><th>runs</th><td>{{.VUs}} VUs, {{.Rounds}} round(s) of {{.DurationSeconds}} s after {{.WarmupSeconds}} s warm-up per side and mode</td></tr>
</table>
<p class="key">sides:{{range .Sides}}<span style="background:{{.Colour}}"></span>{{.Name}}{{end}}</p>
{{range .Modes}}<section class="mode" data-mode="{{.Mode}}">
<h2>{{.Title}}</h2>
<div class="charts">
{{with .Latency}}<svg class="latency" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="latency percentiles">
{{$l := .}}{{range .YTicks}}<line class="grid" x1="{{px $l.Left}}" x2="{{px $l.Right}}" y1="{{px .At}}" y2="{{px .At}}"/><text x="{{px $l.Left}}" dx="-6" y="{{px .At}}" text-anchor="end" dy="4">{{.Label}}</text>
{{end}}{{range .XTicks}}<line class="grid" x1="{{px .At}}" x2="{{px .At}}" y1="{{px $l.Top}}" y2="{{px $l.Bottom}}"/><text x="{{px .At}}" y="{{px $l.Bottom}}" dy="16" text-anchor="middle">{{.Label}}</text>
{{end}}<text x="344" y="314" text-anchor="middle">percentile (log scale of 1 − q)</text><text x="14" y="148" transform="rotate(-90 14 148)" text-anchor="middle">latency, ms</text>
{{range .Curves}}<polyline class="curve" data-side="{{.Side}}" data-round="{{.Round}}" fill="none" stroke="{{.Colour}}" stroke-width="{{if .Round}}1{{else}}3{{end}}"{{if .Round}} stroke-opacity="0.45"{{end}} points="{{.Points}}"/>
{{$c := .}}{{range .Dots}}<circle class="q" data-side="{{$c.Side}}" data-round="{{$c.Round}}" data-q="{{g .Q}}" data-ms="{{g .MS}}" cx="{{.X}}" cy="{{.Y}}" r="{{if $c.Round}}2{{else}}4{{end}}" fill="{{$c.Colour}}"><title>{{$c.Side}}{{if $c.Round}} round {{$c.Round}}{{else}} median{{end}} {{.QLabel}}: {{.MSLabel}} ms</title></circle>
{{end}}{{end}}</svg>{{end}}
{{range .Strips}}<svg class="strip" data-metric="{{.Metric}}" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="{{.Label}}">
<text x="{{px .Left}}" y="12">{{.Label}}{{with .Unit}} ({{.}}){{end}}</text>
{{$s := .}}{{range .YTicks}}<line class="grid" x1="{{px $s.Left}}" x2="{{px $s.Right}}" y1="{{px .At}}" y2="{{px .At}}"/><text x="{{px $s.Left}}" dx="-6" y="{{px .At}}" text-anchor="end" dy="4">{{.Label}}</text>
{{end}}{{range .XLabels}}<text x="{{px .At}}" y="{{px $s.Bottom}}" dy="18" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .Points}}<circle class="pt" data-metric="{{$s.Metric}}" data-side="{{.Side}}" data-round="{{.Round}}" data-value="{{g .Value}}" cx="{{.X}}" cy="{{.Y}}" r="4" fill="{{.Colour}}" fill-opacity="0.7"><title>{{.Side}} round {{.Round}}: {{g .Value}}</title></circle>
{{end}}{{range .Medians}}<line class="median" data-metric="{{$s.Metric}}" data-side="{{.Side}}" data-value="{{g .Value}}" x1="{{.X1}}" x2="{{.X2}}" y1="{{.Y}}" y2="{{.Y}}" stroke="{{.Colour}}" stroke-width="2"><title>{{.Side}} median: {{.Label}}</title></line>
{{end}}</svg>
{{end}}</div>
{{if .Targets}}<table class="targets"><tr><th>side</th><th>target</th><th>got</th><th>result</th></tr>
{{range .Targets}}<tr class="target" data-met="{{.Met}}"><td>{{or .Side "sockets"}}</td><td>{{.Target}}</td><td>{{.Got}}</td><td class="{{if .Met}}met{{else}}missed{{end}}">{{.Result}}</td></tr>
{{end}}</table>{{end}}
</section>
{{end}}</body></html>
`))
