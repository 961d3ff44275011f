// `bundle`: every raw input, the parsed model, the report and a manifest in one .tar.gz that
// `--from` replays to the same report. With redaction, the report is computed from the redacted
// inputs, so nothing in the bundle carries an original address or name.
import {stat, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {buildManifest} from '../bundle/manifest.js'
import {collectBirdLog} from '../collect/bird-log.js'
import {redactFiles} from '../bundle/redact.js'
import {defaultBundleName, writeBundle} from '../bundle/tarball.js'
import {
  DEFAULT_FIX_PROTOCOL_NUMBER, DEFAULT_OVERLAY_TABLE, DEFAULT_TUNNEL_DEV, OVERLAY_SETTINGS_FILE, SnapshotIndex,
} from '../model/snapshot-index.js'
import {namingPaths, NODE_NAME_FILE, parsePoolFlags, snapshotHost} from '../snapshot/build.js'
import type {Snapshot, SourceFile} from '../model/types.js'
import {parseOverlaySettings} from '../parse/overlay-settings.js'
import {UsageError} from '../model/errors.js'
import {palette} from '../render/style.js'
import {renderCheck, renderExplain} from '../render/text.js'
import {loadSourceFiles, ownRoutes, readIppoolsFile, snapshotFrom, type SourceOptions} from './load.js'
import {checkReport, explainReport} from '../report/report.js'

export interface BundleOptions extends SourceOptions {
  out?: string // file or directory
  force?: boolean // overwrite an existing bundle file
  redact?: boolean
  mappingFile?: string // where to keep the pseudonym mapping (never inside the bundle)
  command: string[]
  toolVersion: string
  progress?: (line: string) => void
}

export interface BundleResult {
  schema: number
  path: string
  redacted: boolean
  mappingFile?: string
  sources: Array<{file: string; size: number; error?: string}>
  summary: ReturnType<typeof checkReport>['summary']
}

// report.md explains this many broken prefixes at most
export const EXPLAINED = 1000

/** `-o`'s directory (itself, or a .tar.gz file's) must exist: said before anything is collected. */
async function checkOutputDir(out: string | undefined, force: boolean): Promise<void> {
  if (out === undefined) return
  if (out.endsWith('.tar.gz')) await refuseExisting(out, force)
  const dir = out.endsWith('.tar.gz') ? path.dirname(out) : out
  const isDir = await stat(dir).then(
    (st) => st.isDirectory(),
    () => false,
  )
  if (!isDir)
    throw new UsageError(
      `-o ${out}: ${dir} is not a directory here (name an existing directory, or a .tar.gz file in one)`,
    )
}

/** A bundle is evidence: an existing file is not replaced without --force. */
async function refuseExisting(out: string, force: boolean): Promise<void> {
  if (force) return
  const exists = await stat(out).then(() => true, () => false)
  if (exists) throw new UsageError(`-o ${out}: the file exists (give --force to overwrite it, or another name)`)
}

export async function createBundle(opts: BundleOptions): Promise<BundleResult> {
  const progress = opts.progress ?? (() => {})
  if (opts.mappingFile !== undefined && !opts.redact)
    throw new UsageError('--mapping-file keeps the pseudonyms of --redact: give --redact too, or drop --mapping-file')
  const force = opts.force ?? false
  // the flags first: the collection takes seconds on a full table
  await checkOutputDir(opts.out, force)
  // pools named on the command line travel in the bundle, so a replay diagnoses the same prefixes
  const poolFile = await poolSourceFile(opts)
  progress(opts.from ? `reading ${opts.from}` : 'collecting from the live node (ip, /proc/sys, BIRD socket)')
  const source = await loadSourceFiles({...opts, everySource: true})
  if (source.origin.kind === 'live') {
    const log = await collectBirdLog(source.files.find((f) => f.name === 'bird.conf')?.text)
    if (log) source.files.push(log)
  }
  for (const f of source.files)
    progress(`  ${f.name}${f.error ? `: FAILED (${f.error})` : ` ${Buffer.byteLength(f.text ?? '')} bytes`}`)
  let files = poolFile
    ? [...source.files.filter((f) => f.name !== 'ippools.yaml' && f.name !== 'ippools.json'), poolFile]
    : source.files
  // the node's name travels in the bundle, so that fleet names it (DESIGN §6)
  if (opts.node !== undefined)
    files = [
      ...files.filter((f) => f.name !== NODE_NAME_FILE),
      {name: NODE_NAME_FILE, text: `${opts.node}\n`, command: `routedoctor --node ${opts.node}`},
    ]
  // the overlay's protocol, table and tunnel device travel in the bundle, so that a replay reads it as this run did
  files = withOverlaySettings(files, opts, source.origin)
  // the snapshot's own node, not this machine, when the bundle is made of a snapshot directory; '' when no source
  // names it (the file is routedoctor-unknown-…, and a replay says the node is unknown, as the snapshot does)
  let host = snapshotHost({origin: source.origin, files}) ?? (source.origin.kind === 'live' ? os.hostname() : '')
  let mapping: Record<string, string> | undefined
  let command = opts.command
  if (opts.redact) {
    // Calico names blocks by their CIDR with dashes (192-168-1-0-26): written as CIDRs, so that they are redacted too
    files = files.map((f) =>
      f.name.startsWith('calico/') && f.text !== undefined
        ? {...f, text: f.text.replace(/\b(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,2})\b/g, '$1.$2.$3.$4/$5')}
        : f,
    )
    const red = redactFiles(files, {
      hostnames: [host, os.hostname(), ...nodeNames(files, opts.node)].filter((h) => h && h !== 'snapshot'),
    })
    files = red.files
    if (host !== '') host = red.redactor.text(host)
    mapping = red.mapping
    command = withoutPaths(command).map((arg) => red.redactor.text(arg)) // --pool may carry addresses
    // a file's recorded command names where it was read: the file's name is kept, not its directory
    files = files.map((f) => (f.command?.startsWith('read ') ? {...f, command: `read ${f.name}`} : f))
    progress(`redacted ${Object.keys(mapping).length} addresses, names and MACs`)
  }
  const snapshot = await snapshotFrom(
    {files, origin: {...source.origin, host: host || undefined}},
    {...opts, pools: undefined, ippools: undefined},
  )
  const ctx = new SnapshotIndex(snapshot, ownRoutes(opts))
  const report = checkReport(ctx)
  const plain = palette(false)
  const shared = {host: report.host.findings, node: report.node}
  const {files: _files, ...model} = snapshot
  // its sources are listed as the bundle is written (each text encoded and checksummed once: a full table's are large)
  const manifest = buildManifest({
    files: [],
    tool: {name: 'routedoctor', version: opts.toolVersion},
    collectedAt: source.origin.collectedAt ?? new Date().toISOString(),
    host,
    command,
    redacted: opts.redact ?? false,
  })
  let out = opts.out ?? defaultBundleName(host, new Date(manifest.collectedAt))
  if (opts.out && !opts.out.endsWith('.tar.gz'))
    out = path.join(opts.out, defaultBundleName(host, new Date(manifest.collectedAt)))
  await refuseExisting(out, force) // a default name taken within the same second
  // in pieces, each prefix explained as it is written: a full table's report is larger than one string.
  // The first EXPLAINED broken prefixes are explained; a full table can have far more, which nobody reads and
  // which would cost much of the bundle's time: the replay explains any of them.
  function* reportMd(): Generator<string> {
    yield `# routedoctor report\n\n\`\`\`\n${renderCheck(report, plain)}\n\`\`\`\n`
    let broken = 0
    for (const p of report.prefixes) {
      if (p.verdict === 'ok' || p.verdict === 'local') continue
      if (++broken <= EXPLAINED)
        yield `\n\`\`\`\n${renderExplain(explainReport(ctx, p.prefix, shared), plain)}\n\`\`\`\n`
    }
    if (broken > EXPLAINED) {
      yield `\n${broken - EXPLAINED} more broken prefixes are in the table above, not explained here: \`routedoctor explain PREFIX --from ${path.basename(out)}\` explains any of them.\n`
    }
  }
  await writeBundle({files, model, reportMd: reportMd(), reportJson: report, manifest}, out)
  if (mapping && opts.mappingFile)
    await writeFile(opts.mappingFile, JSON.stringify(mapping, null, 2) + '\n', {mode: 0o600})
  progress(`wrote ${out}`)
  return {
    schema: 1,
    path: out,
    redacted: opts.redact ?? false,
    ...(opts.mappingFile && mapping ? {mappingFile: opts.mappingFile} : {}),
    sources: files.map((f) => ({
      file: f.name,
      size: Buffer.byteLength(f.text ?? ''),
      ...(f.error ? {error: f.error} : {}),
    })),
    summary: report.summary,
  }
}

/**
 * `files` with overlay-settings.json: --protocol, --table and --tunnel-dev as given, else as the source recorded them,
 * else the defaults. Always written: a replay then reads the same, whatever the defaults of the routedoctor replaying
 * it.
 */
function withOverlaySettings(files: SourceFile[], opts: SourceOptions, origin: Snapshot['origin']): SourceFile[] {
  const recordedText = files.find((f) => f.name === OVERLAY_SETTINGS_FILE && f.text !== undefined)?.text
  const recorded = recordedText === undefined ? {}
    : namingPaths(files, origin, () => parseOverlaySettings(recordedText, OVERLAY_SETTINGS_FILE))
  const protocol = opts.fixProtocol ?? recorded.protocol ?? DEFAULT_FIX_PROTOCOL_NUMBER
  const table = opts.overlayTable ?? recorded.table ?? DEFAULT_OVERLAY_TABLE
  const tunnelDev = opts.tunnelDev ?? recorded.tunnelDev ?? DEFAULT_TUNNEL_DEV
  const text = JSON.stringify({protocol, table, tunnelDev}, null, 2) + '\n'
  const command = `routedoctor --protocol ${protocol} --table ${table} --tunnel-dev ${tunnelDev}`
  const settings: SourceFile = {name: OVERLAY_SETTINGS_FILE, text, command}
  return [...files.filter((f) => f.name !== OVERLAY_SETTINGS_FILE), settings]
}

/** The Kubernetes node names a bundle carries (--node, the truth's Nodes and affinities): host names to redact. */
function nodeNames(files: SourceFile[], node: string | undefined): string[] {
  const names = new Set<string>(node ? [node] : [])
  for (const f of files) {
    if (f.text === undefined || !/^calico\/(nodes|blockaffinities|ipamblocks)\.json$/.test(f.name)) continue
    for (const m of f.text.matchAll(/"(?:name|node)"\s*:\s*"([^"]+)"|"host:([^"]+)"/g))
      if (!f.name.endsWith('blocks.json') || m[2] || m[0].startsWith('"node"')) names.add(m[1] ?? m[2])
  }
  return [...names]
}

// flags whose value is a local path: a redacted bundle records the flag, not the path
const PATH_FLAGS = new Set([
  '--from',
  '-o',
  '--output',
  '--mapping-file',
  '--ippools',
  '--bird-socket',
  '--bird-conf',
  '--journal-dir',
  '--calico',
])

/** The command line with every local path replaced by PATH (`--from DIR`, `--from=DIR`, `-o FILE`). */
export function withoutPaths(argv: string[]): string[] {
  return argv.map((arg, i) => {
    const eq = arg.indexOf('=')
    if (arg.startsWith('-') && eq > 0 && PATH_FLAGS.has(arg.slice(0, eq))) return `${arg.slice(0, eq)}=PATH`
    return i > 0 && PATH_FLAGS.has(argv[i - 1]) ? 'PATH' : arg
  })
}

/** --pool flags as a Calico IPPool list, or the --ippools file as given. */
async function poolSourceFile(opts: SourceOptions): Promise<SourceFile | undefined> {
  if (opts.pools && opts.pools.length > 0) {
    const items = parsePoolFlags(opts.pools).map((p, i) => ({
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: {name: `routedoctor-pool-${i + 1}`},
      spec: {
        cidr: p.cidr,
        ipipMode: p.mode === 'ipip' ? 'Always' : 'Never',
        vxlanMode: p.mode === 'vxlan' ? 'Always' : 'Never',
      },
    }))
    return {
      name: 'ippools.json',
      text: JSON.stringify({apiVersion: 'projectcalico.org/v3', kind: 'IPPoolList', items}, null, 2) + '\n',
      command: `routedoctor --pool ${opts.pools.join(' --pool ')}`,
    }
  }
  if (opts.ippools) {
    const text = await readIppoolsFile(opts.ippools)
    return {
      name: /\.json$/i.test(opts.ippools) ? 'ippools.json' : 'ippools.yaml',
      path: opts.ippools,
      text,
      command: `read ${opts.ippools}`,
    }
  }
  return undefined
}
