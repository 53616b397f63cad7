package transport

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"strconv"
	"time"
)

// statusScript refreshes the page without a reload: it fetches the page
// again and swaps in its #status element. The server's template is the
// only renderer, so the page and its refresh never disagree, and nothing
// is escaped by hand in script. DOMParser runs no script of what it parses.
const statusScript = `(function(){
var el=document.getElementById("refreshed");
function tick(){
 fetch(location.pathname+"?format=html",{headers:{Accept:"text/html"},cache:"no-store"})
 .then(function(r){if(!r.ok)throw new Error("status "+r.status);return r.text();})
 .then(function(t){
  var doc=new DOMParser().parseFromString(t,"text/html");
  var next=doc.getElementById("status"),cur=document.getElementById("status");
  if(next&&cur){cur.replaceWith(next);}
  el.textContent="refreshed "+new Date().toLocaleTimeString();
 })
 .catch(function(e){el.textContent="refresh failed: "+e.message;});
}
setInterval(tick,3000);
})();`

const statusStyle = `body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.3em 0 1em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
.open,.ejected{color:#b00;font-weight:bold}.half_open{color:#a60}.closed{color:#070}
h2{margin-top:1.4em}small{color:#666}`

// statusCSP allows the page's own inline script and style (by hash), and a
// fetch of its own origin: nothing else loads.
var statusCSP = "default-src 'none'; connect-src 'self'; script-src '" + cspHash(statusScript) + "'; style-src '" + cspHash(statusStyle) + "'"

func cspHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(h[:])
}

var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"share": formatShare,
	"ms": func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64)
	},
	"ratio": func(f float64) string { return strconv.FormatFloat(f, 'f', 4, 64) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>fusion transport status</title>
<style>{{.Style}}</style></head>
<body>
<h1>fusion transport status</h1>
<p><small id="refreshed">refreshes every 3 s</small></p>
<div id="status" data-at="{{.S.At.Format "2006-01-02T15:04:05Z07:00"}}">
<p>path <b id="path">{{.S.Path}}</b>, mode <b id="mode">{{.S.Mode}}</b>, at {{.S.At.Format "15:04:05 UTC"}}{{if .S.Closed}}, <b>closed</b>{{end}}</p>
<h2>Source schemas</h2>
<table id="schemas"><thead><tr><th>schema</th><th>url</th><th>canary share</th><th>legacy window</th><th>sockets window</th><th>fallbacks</th><th>cooldown until</th></tr></thead><tbody>
{{range .S.Schemas}}<tr class="schema" data-schema="{{.Name}}"><td>{{.Name}}</td><td>{{.URL}}</td>
{{with .Canary}}<td class="n" data-k="share">{{share .Share}}</td>
<td class="n" data-k="legacy">{{.Legacy.Requests}} req, {{.Legacy.Failures}} failed ({{ratio .Legacy.ErrorRatio}}), p99 {{ms .Legacy.P99}} ms</td>
<td class="n" data-k="sockets">{{.Sockets.Requests}} req, {{.Sockets.Failures}} failed ({{ratio .Sockets.ErrorRatio}}), p99 {{ms .Sockets.P99}} ms</td>
<td class="n" data-k="fallbacks">{{.Fallbacks}}</td><td>{{with .CooldownUntil}}{{.Format "15:04:05"}}{{else}}-{{end}}</td>
{{else}}<td colspan="5">no canary</td>{{end}}</tr>
{{end}}</tbody></table>
{{with .S.Rollout}}<h2>Runtime rollout</h2>
<p id="rollout">flag <b>{{.Flag}}</b>, kill switch <b>{{.KillFlag}}</b> <b id="killed"{{if .Killed}} class="open"{{end}}>{{if .Killed}}pulled: every new call on legacy{{else}}not pulled{{end}}</b>, startup switch <b>{{.StartupSwitch}}</b>{{with .TargetingHeader}}, targeting key from header <b>{{.}}</b>{{end}}; fallbacks to the startup switch:
{{range $r, $n := .Fallbacks}}<span data-k="{{$r}}">{{$r}} {{$n}}</span> {{end}}</p>
<table id="rollout-schemas"><thead><tr><th>schema</th><th>legacy calls (1 min)</th><th>sockets calls (1 min)</th><th>sockets share</th><th>by startup</th><th>by flag</th><th>by kill</th><th>last decision</th><th>value</th><th>variant</th><th>reason</th><th>fallback</th></tr></thead><tbody>
{{range $s := $.S.Schemas}}{{with .Rollout}}<tr class="rollout" data-schema="{{$s.Name}}"><td>{{$s.Name}}</td><td class="n" data-k="legacy">{{.Legacy}}</td><td class="n" data-k="sockets">{{.Sockets}}</td><td class="n" data-k="sockets_share">{{share .SocketsShare}}</td><td class="n">{{index .BySource "startup"}}</td><td class="n">{{index .BySource "flag"}}</td><td class="n">{{index .BySource "kill"}}</td>
{{with .Decision}}<td data-k="source">{{.Source}}</td><td>{{.Value}}</td><td>{{.Variant}}</td><td>{{.Reason}}</td><td{{if .Fallback}} class="open"{{end}} title="{{.Cause}}">{{or .Fallback "-"}}</td>{{else}}<td colspan="5">no call yet</td>{{end}}</tr>
{{end}}{{end}}</tbody></table>
{{end}}<h2>Response caches</h2>
<table id="caches"><thead><tr><th>schema</th><th>mode</th><th>store</th><th>health</th><th>hit ratio</th><th>hits</th><th>misses</th><th>bypasses</th><th>stored</th><th>not stored</th><th>store errors</th><th>stale</th><th>refreshes</th><th>entries</th><th>bytes</th></tr></thead><tbody>
{{range $s := .S.Schemas}}{{with .Cache}}<tr class="cache" data-schema="{{$s.Name}}"><td>{{$s.Name}}</td><td data-k="mode">{{.Mode}}</td><td data-k="store">{{.Store}}</td><td data-k="health"{{if ne .Health "ok"}} class="open"{{end}}>{{.Health}}</td><td class="n" data-k="hit_ratio">{{ratio .HitRatio}}</td><td class="n" data-k="hits">{{.Hits}}</td><td class="n" data-k="misses">{{.Misses}}</td><td class="n" data-k="bypasses">{{.Bypasses}}</td><td class="n" data-k="stored">{{.Stored}}</td><td class="n" data-k="not_stored">{{.NotStored}}</td><td class="n" data-k="store_errors">{{.StoreErrors}}</td><td class="n" data-k="stale">{{.Stale}}</td><td class="n" data-k="refreshes">{{.Refreshes}}</td><td class="n" data-k="entries">{{with .Entries}}{{.}}{{else}}-{{end}}</td><td class="n" data-k="bytes">{{with .Bytes}}{{.}}{{else}}-{{end}}</td></tr>
{{end}}{{end}}</tbody></table>
<h2>Persisted queries</h2>
<table id="persisted-queries"><thead><tr><th>schema</th><th>state</th><th>GET</th><th>by hash</th><th>not found</th><th>not supported</th><th>request errors</th></tr></thead><tbody>
{{range $s := .S.Schemas}}{{with .PersistedQueries}}<tr class="persisted" data-schema="{{$s.Name}}"><td>{{$s.Name}}</td><td data-k="state"{{if not .On}} class="open"{{end}}>{{if .On}}on{{else}}off ({{.Off}}){{end}}</td><td data-k="get">{{.GET}}</td><td class="n" data-k="by_hash">{{.ByHash}}</td><td class="n" data-k="not_found">{{.NotFound}}</td><td class="n" data-k="not_supported">{{.NotSupported}}</td><td class="n" data-k="request_errors">{{.RequestErrors}}</td></tr>
{{end}}{{end}}</tbody></table>
<h2>Rate limits</h2>
<table id="rate-limits"><thead><tr><th>schema</th><th>store</th><th>limit</th><th>state</th><th>on store error</th><th>since</th><th>limited</th><th>store errors</th><th>fallbacks</th><th>last error</th></tr></thead><tbody>
{{range $s := .S.Schemas}}{{with .RateLimit}}<tr class="rate-limit" data-schema="{{$s.Name}}"><td>{{$s.Name}}</td><td data-k="store">{{.Store}}</td><td class="n" data-k="limit">{{.RequestsPerSecond}}/s, burst {{.Burst}}</td><td data-k="state"{{if eq .State "fallen_back"}} class="open"{{end}}>{{.State}}</td><td data-k="on_store_error">{{or .OnStoreError "-"}}</td><td>{{with .Since}}{{.Format "15:04:05"}}{{else}}-{{end}}</td><td class="n" data-k="limited">{{.Limited}}</td><td class="n" data-k="store_errors">{{.StoreErrors}}</td><td class="n" data-k="fallbacks">{{.Fallbacks}}</td><td data-k="last_error">{{or .LastError "-"}}</td></tr>
{{end}}{{end}}</tbody></table>
<h2>Response cache shadow differences</h2>
<table id="cache-differences"><thead><tr><th>schema</th><th>at</th><th>entry age (s)</th><th>kinds</th><th>paths</th></tr></thead><tbody>
{{range $s := .S.Schemas}}{{with .Cache}}{{range .ShadowDifferences}}<tr class="cache-difference" data-schema="{{$s.Name}}"><td>{{$s.Name}}</td><td>{{.At.Format "15:04:05.000"}}</td><td class="n">{{.Age}}</td><td>{{range $i, $k := .Kinds}}{{if $i}}, {{end}}{{$k}}{{end}}</td><td>{{range $i, $p := .Paths}}{{if $i}}, {{end}}{{$p}}{{end}}</td></tr>
{{end}}{{end}}{{end}}</tbody></table>
<h2>Routes</h2>
<table id="routes"><thead><tr><th>schema</th><th>role</th><th>path</th><th>engine</th><th>breaker</th><th>open conns</th><th>idle conns</th></tr></thead><tbody>
{{range $s := .S.Schemas}}{{range .Routes}}<tr class="route" data-schema="{{$s.Name}}" data-role="{{.Role}}"><td>{{$s.Name}}</td><td>{{.Role}}</td><td data-k="path">{{.Path}}</td><td data-k="engine">{{or .Engine "-"}}</td><td data-k="breaker" class="{{.Breaker}}">{{.Breaker}}</td>
{{with .Conns}}<td class="n" data-k="open">{{.Open}}</td><td class="n" data-k="idle">{{.Idle}}</td>{{else}}<td>-</td><td>-</td>{{end}}</tr>
{{end}}{{end}}</tbody></table>
<h2>Addresses</h2>
<table id="addresses"><thead><tr><th>schema</th><th>role</th><th>address</th><th>conns</th><th>idle</th><th>in flight</th><th>ejected</th><th>ejections</th><th>gone</th></tr></thead><tbody>
{{range $s := .S.Schemas}}{{range $r := .Routes}}{{range .Addrs}}<tr class="address" data-schema="{{$s.Name}}" data-role="{{$r.Role}}" data-address="{{.Address}}"><td>{{$s.Name}}</td><td>{{$r.Role}}</td><td>{{.Address}}</td><td class="n" data-k="conns">{{.Conns}}</td><td class="n" data-k="idle">{{.Idle}}</td><td class="n" data-k="in_flight">{{.InFlight}}</td><td data-k="ejected"{{if .Ejected}} class="ejected"{{end}}>{{.Ejected}}</td><td class="n" data-k="ejections">{{.Ejections}}</td><td data-k="gone">{{.Gone}}</td></tr>
{{end}}{{end}}{{else}}<tr><td colspan="9">no pool reports addresses (legacy path)</td></tr>{{end}}</tbody></table>
<h2>Recent events</h2>
<table id="events"><thead><tr><th>at</th><th>schema</th><th>event</th><th>path</th><th>from</th><th>to</th><th>address</th></tr></thead><tbody>
{{range .S.Events}}<tr class="event" data-schema="{{.Schema}}" data-kind="{{.Kind}}"><td>{{.At.Format "15:04:05.000"}}</td><td>{{.Schema}}</td><td>{{.Kind}}</td><td>{{.Path}}</td><td>{{.From}}</td><td>{{.To}}</td><td>{{.Address}}</td></tr>
{{else}}<tr><td colspan="7">none yet</td></tr>{{end}}</tbody></table>
</div>
<script>{{.Script}}</script>
</body></html>
`))

func writeStatusPage(w http.ResponseWriter, s status) {
	var buf bytes.Buffer
	err := statusPage.Execute(&buf, struct {
		S      status
		Style  template.CSS
		Script template.JS
	}{s, template.CSS(statusStyle), template.JS(statusScript)})
	if err != nil {
		http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", statusCSP)
	w.Write(buf.Bytes())
}
