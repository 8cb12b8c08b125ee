// SPDX-License-Identifier: Apache-2.0
/// \file html_assets.hpp
/// \brief The page's inline style sheet and scripts. Nothing is loaded from elsewhere: the page
/// declares a content security policy that forbids it.
#pragma once

#include <string_view>

namespace nnergy::html {

/// Allows only the page's own inline style and scripts and data: images; no fetches at all.
inline constexpr std::string_view content_security_policy =
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";

inline constexpr std::string_view style_sheet = R"css(
:root{--fg:#1d232b;--muted:#5b6570;--line:#d9dee3;--bg:#fff;--panel:#f5f7f9;--accent:#3b6fb6}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
header.page,main{max-width:1180px;margin:0 auto;padding:16px 24px}
h1{font-size:22px;margin:0 0 6px}
h2{font-size:18px;margin:28px 0 8px;padding-top:8px;border-top:2px solid var(--line)}
h3{font-size:15px;margin:18px 0 6px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0 0}
dl.meta dt{color:var(--muted)}dl.meta dd{margin:0;word-break:break-all}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.card{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:8px 12px;min-width:130px}
.card .label{color:var(--muted);font-size:12px}.card .value{font-size:18px;font-weight:600}
.note{color:var(--muted);font-style:italic;margin:6px 0}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:14px}
.charts.compare{grid-template-columns:repeat(auto-fit,minmax(460px,1fr))}
figure.chart{margin:0;background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:10px}
figcaption{font-weight:600;margin-bottom:4px}
svg{width:100%;max-width:980px;height:auto;display:block}
svg text{font-size:11px;fill:var(--fg)}
svg .tick{fill:var(--muted)}svg .title{font-size:12px}
svg .grid{stroke:#eceff2;stroke-width:1}svg .axis{stroke:#8a949e;stroke-width:1}
svg .roof{stroke:#1d232b;stroke-width:2;fill:none}svg .roof-label{font-size:11px;font-weight:600}
svg .pt{stroke:#fff;stroke-width:.8;opacity:.9}svg .pt:hover{stroke:#000;stroke-width:1.5}
svg .area{stroke:none;opacity:.9}svg .hover{fill:transparent}svg .hover:hover{fill:rgba(0,0,0,.08)}
svg .peak{stroke:#d9534f;stroke-width:1.5;stroke-dasharray:4 3}svg .peak-dot{fill:#d9534f}
svg .peak-label{fill:#b52b27;font-weight:600}
svg .curve{fill:none;stroke:var(--accent);stroke-width:2}
svg .mark{stroke:#9aa3ad;stroke-dasharray:3 3}svg .mark-label{fill:var(--muted)}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin-top:4px}
.key i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;vertical-align:-1px}
nav.runs{display:flex;flex-wrap:wrap;gap:6px;margin:10px 0}
nav.runs button{font:inherit;padding:4px 10px;border:1px solid var(--line);border-radius:4px;background:var(--panel);cursor:pointer}
nav.runs button[aria-pressed=true]{background:var(--accent);color:#fff;border-color:var(--accent)}
.filter{margin:8px 0;display:flex;gap:10px;align-items:center}
.filter input{font:inherit;padding:4px 8px;border:1px solid var(--line);border-radius:4px;width:260px}
.table-wrap{overflow-x:auto;max-height:640px;overflow-y:auto;border:1px solid var(--line);border-radius:6px}
/* Off-screen charts and tables skip layout until scrolled to: a 500-row table otherwise
   dominates the page's load time. */
.table-wrap,figure.chart{content-visibility:auto;contain-intrinsic-size:auto 420px}
table.kernels{border-collapse:collapse;width:100%;font-size:12.5px}
table.kernels th,table.kernels td{padding:3px 8px;border-bottom:1px solid #eceff2;text-align:left;white-space:nowrap}
table.kernels th{position:sticky;top:0;background:var(--panel);cursor:pointer;user-select:none}
table.kernels th[aria-sort=ascending]::after{content:" \25B2"}table.kernels th[aria-sort=descending]::after{content:" \25BC"}
table.kernels td.ops{max-width:280px;overflow:hidden;text-overflow:ellipsis}
table.kernels td.num{text-align:right;font-variant-numeric:tabular-nums}
table.kernels tr:hover td{background:#f0f4fa}
.dot{display:inline-block;width:9px;height:9px;border-radius:50%;margin-right:5px}
footer{max-width:1180px;margin:0 auto;padding:12px 24px 30px;color:var(--muted);font-size:12px}
)css";

/// Runs first, in <head>: records script errors on the root element, where a test (or a person
/// with the inspector) finds them.
inline constexpr std::string_view error_script = R"js(
(function(){var root=document.documentElement;
window.addEventListener("error",function(e){
root.setAttribute("data-errors",(root.getAttribute("data-errors")||"")+(e.message||"error")+"; ");});})();
)js";

/// Sorting and filtering of the kernel tables, and the run selector. Without scripts the page
/// still shows every run and every chart; this only adds interaction.
inline constexpr std::string_view page_script = R"js(
(function(){"use strict";
var root=document.documentElement;
function key(cell){var v=cell.getAttribute("data-v");return v===null?cell.textContent:v;}
function sortBy(table,col){
  var head=table.tHead.rows[0].cells,th=head[col];
  var asc=th.getAttribute("aria-sort")!=="ascending";
  for(var i=0;i<head.length;i++)head[i].removeAttribute("aria-sort");
  th.setAttribute("aria-sort",asc?"ascending":"descending");
  var numeric=th.getAttribute("data-type")==="number",body=table.tBodies[0];
  var rows=Array.prototype.slice.call(body.rows);
  rows.sort(function(a,b){
    var x=key(a.cells[col]),y=key(b.cells[col]);
    if(numeric){
      if(x===""||y==="")return x===y?0:(x===""?1:-1);  /* missing values last either way */
      var d=parseFloat(x)-parseFloat(y);return asc?d:-d;}
    var c=x.localeCompare(y);return asc?c:-c;});
  var frag=document.createDocumentFragment();
  rows.forEach(function(r){frag.appendChild(r);});body.appendChild(frag);}
Array.prototype.forEach.call(document.querySelectorAll("table.kernels"),function(table){
  Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th,col){
    th.tabIndex=0;th.title="sort";
    th.addEventListener("click",function(){sortBy(table,col);});
    th.addEventListener("keydown",function(e){if(e.key==="Enter"){sortBy(table,col);}});});});
Array.prototype.forEach.call(document.querySelectorAll("input[data-table]"),function(input){
  var table=document.getElementById(input.getAttribute("data-table"));
  var shown=document.getElementById(input.getAttribute("data-count"));
  function apply(){
    var q=input.value.trim().toLowerCase(),n=0,rows=table.tBodies[0].rows;
    for(var i=0;i<rows.length;i++){
      var hit=!q||rows[i].textContent.toLowerCase().indexOf(q)>=0;
      rows[i].hidden=!hit;if(hit)n++;}
    if(shown)shown.textContent=n+" of "+rows.length+" kernels shown";}
  input.addEventListener("input",apply);apply();});
var buttons=document.querySelectorAll("nav.runs button");
function select(run){
  Array.prototype.forEach.call(document.querySelectorAll("section.run"),function(s){
    s.hidden=run!=="all"&&s.id!==run;});
  Array.prototype.forEach.call(buttons,function(b){
    b.setAttribute("aria-pressed",b.getAttribute("data-run")===run?"true":"false");});}
Array.prototype.forEach.call(buttons,function(b){
  b.addEventListener("click",function(){select(b.getAttribute("data-run"));});});
if(buttons.length)select(buttons[0].getAttribute("data-run"));
root.setAttribute("data-render-ms",performance.now().toFixed(1));
window.addEventListener("load",function(){root.setAttribute("data-load-ms",performance.now().toFixed(1));});
root.setAttribute("data-ready","1");
})();
)js";

}  // namespace nnergy::html
