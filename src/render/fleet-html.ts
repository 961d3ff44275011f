// `fleet --html`: one self-contained page (inline CSS and a little JS, no network): the colour matrix, each cell a
// <details> that opens the pair's blocks and their explanations (readable without JavaScript), and the findings.
import type {FleetPair, FleetReport} from '../fleet/join.js'
import {counted} from '../model/format.js'

const esc = (s: string): string => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`)

const CSS = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}
table.matrix{border-collapse:collapse}
.matrix th,.matrix td{border:1px solid #bbb;padding:2px 4px;vertical-align:top;text-align:left}
.matrix th.to{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}
td.v-ok{background:#cfeccf}td.v-missing,td.v-unreachable{background:#f4b4b4}td.v-misrouted{background:#f7c48b}
td.v-not-tunneled,td.v-multipath-lost{background:#f6e58d}td.self{background:#eee}td.none{background:#fafafa;color:#888}
td details>summary{cursor:pointer;font-weight:600}
td details[open]{min-width:28em;background:#fff;border:1px solid #888;padding:4px}
.sev-error{color:#b00}.sev-warning{color:#a60}.sev-info{color:#06c}
code{font-size:.95em}ul{margin:.2em 0;padding-left:1.2em}
`

const JS = `
document.addEventListener('keydown',e=>{if(e.key==='Escape')for(const d of document.querySelectorAll('details[open]'))d.open=false})
`

/**
 * The page in pieces, in order, each a line or a few (written each followed by a newline): a large fleet's page is
 * written as it is made, never held as one string.
 */
export function* fleetHtmlPieces(r: FleetReport): Generator<string> {
  const pair = new Map(r.pairs.map((p) => [`${p.from}\0${p.to}`, p]))
  const broken = r.pairs.filter((p) => p.verdict !== 'ok').length
  yield `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>routedoctor fleet</title>
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>${CSS}</style></head><body>
<h1>routedoctor fleet: ${counted(r.nodes.length, 'node')}, ${counted(broken, 'broken pair')}</h1>
<p>Each cell: from the row's node, the worst verdict of the column node's blocks. Open a cell for its blocks.
${r.truth ? `Calico's truth: ${esc(r.truth.files.join(', '))}${r.truth.apiGroup ? ` (${esc(r.truth.apiGroup)})` : ''}.` : 'No Calico truth: block owners unknown.'}</p>
<table class="matrix"><thead><tr><th>from \\ to</th>${r.nodes.map((n) => `<th class="to" scope="col">${esc(n.name)}</th>`).join('')}</tr></thead>
<tbody>`
  for (const a of r.nodes) {
    const cells = r.nodes.map((b) => {
      if (a.name === b.name) return '<td class="self">·</td>'
      if (a.source === undefined) return '<td class="none" title="no source for this node">?</td>'
      const p = pair.get(`${a.name}\0${b.name}`)
      // without the truth no block has a known owner: not that the node owns none
      const none = r.truth ? `${esc(b.name)} owns no block` : 'no Calico truth: block owners unknown'
      if (!p || p.checked === 0) return `<td class="none" title="${none}">–</td>`
      return `<td class="v-${p.verdict}" data-from="${esc(a.name)}" data-to="${esc(b.name)}">${cell(p)}</td>`
    })
    yield `<tr><th scope="row">${esc(a.name)}</th>${cells.join('')}</tr>`
  }
  yield '</tbody></table>\n<h2>Cluster findings</h2>'
  if (r.findings.length === 0) yield '<p id="findings">None.</p>'
  else {
    yield '<ul id="findings">'
    for (const f of r.findings) {
      yield `<li><span class="sev-${f.severity}">${f.severity}</span> <code>${f.id}</code> ${esc(f.title)}` +
        `<br><small>${esc(f.detail)}</small></li>`
    }
    yield '</ul>'
  }
  yield '<h2>Nodes</h2>\n<table class="matrix"><thead><tr><th>node</th><th>address</th><th>BIRD</th><th>tunnel MTU</th>' +
    '<th>hash policy</th><th>route owner</th><th>check</th><th>source</th></tr></thead>\n<tbody>'
  for (const n of r.nodes) {
    yield `<tr><td>${esc(n.name)}</td><td>${esc(n.address ?? '?')}</td><td>${esc(n.birdVersion ?? '?')}</td>` +
      `<td>${n.tunnelMtu ?? '?'}</td><td>${esc(n.hashPolicy ?? '?')}</td><td>${esc(n.routeOwner ?? '?')}</td>` +
      `<td>${n.summary ? `${counted(n.summary.errors, 'error')}, ${counted(n.summary.warnings, 'warning')}` : 'no source'}</td>` +
      `<td>${esc(n.source ?? '')}</td></tr>`
  }
  yield `</tbody></table>\n<script>${JS}</script>\n</body></html>`
}

function cell(p: FleetPair): string {
  if (p.verdict === 'ok')
    return `<details><summary>ok</summary>${p.checked} block${p.checked === 1 ? '' : 's'} of ${esc(p.to)}, all ok from ${esc(p.from)}.</details>`
  const blocks = p.blocks.map(
    (b) =>
      `<li><code>${esc(b.prefix)}</code> <b>${esc(b.verdict)}</b><ul>${b.findings
        .map(
          (f) =>
            `<li><span class="sev-${f.severity}">${esc(f.id)}</span>: ${esc(f.title)}${f.detail ? `<br><small>${esc(f.detail)}</small>` : ''}${f.fix ? `<br><small>fix: ${esc(f.fix)}</small>` : ''}</li>`,
        )
        .join('')}</ul></li>`,
  )
  return `<details><summary>${esc(p.verdict)}</summary><p>${esc(p.from)} → ${esc(p.to)}: ${p.blocks.length} of ${counted(p.checked, 'block')} broken</p><ul>${blocks.join('')}</ul></details>`
}
