// The bundle's manifest.json (DESIGN §6): tool version, collection time, how each source was
// collected (command, exit status, duration, error) and a sha256 of every file in the archive.
import {createHash} from 'node:crypto'

import type {SourceFile} from '../model/types.js'

export interface ManifestSource {
  file: string // DESIGN §3 name; the text is at snapshot/<file> when it was collected
  command?: string
  exitStatus?: number
  durationMs?: number
  size: number // bytes of the collected text (0 when nothing was collected)
  sha256: string // of the collected text (of the empty string when nothing was collected)
  error?: string
}

export interface ManifestFile {
  path: string // path inside the archive
  size: number
  sha256: string
}

export interface Manifest {
  schema: 1
  tool: {name: string; version: string}
  collectedAt: string // ISO 8601
  host: string
  command: string[] // the routedoctor command line that wrote the bundle
  redacted: boolean
  sources: ManifestSource[]
  files: ManifestFile[] // every archive member except manifest.json itself; filled in by writeBundle
}

export function sha256(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex')
}

export interface ManifestInput {
  files: SourceFile[]
  tool: {name: string; version: string}
  collectedAt?: string | Date // default: now
  host: string
  command?: string[]
  redacted?: boolean
}

/** A manifest for these sources. `files` stays empty: writeBundle lists what it actually writes. */
export function buildManifest(input: ManifestInput): Manifest {
  const at = input.collectedAt ?? new Date()
  return {
    schema: 1,
    tool: {name: input.tool.name, version: input.tool.version},
    collectedAt: typeof at === 'string' ? at : at.toISOString(),
    host: input.host,
    command: input.command ?? [],
    redacted: input.redacted ?? false,
    sources: input.files.map((f) => sourceEntry(f)),
    files: [],
  }
}

/** `bytes`: the text as UTF-8, when the caller has it already (a full table's dump is encoded once). */
export function sourceEntry(f: SourceFile, bytes: Buffer = Buffer.from(f.text ?? '', 'utf8')): ManifestSource {
  // key order as documented; absent fields stay absent (not null) in manifest.json
  return {
    file: f.name,
    ...(f.command === undefined ? {} : {command: f.command}),
    ...(f.exitStatus === undefined ? {} : {exitStatus: f.exitStatus}),
    ...(f.durationMs === undefined ? {} : {durationMs: f.durationMs}),
    size: bytes.length,
    sha256: sha256(bytes),
    ...(f.error === undefined ? {} : {error: f.error}),
  }
}

/** Why a parsed manifest.json is not one we can replay, or undefined when it is fine. */
export function manifestProblem(m: unknown): string | undefined {
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return 'manifest.json is not a JSON object'
  const o = m as Record<string, unknown>
  if (o.schema !== 1) return `manifest.json has schema ${JSON.stringify(o.schema)}, this routedoctor reads schema 1`
  if (!Array.isArray(o.sources)) return 'manifest.json has no "sources" list'
  for (const s of o.sources) {
    if (typeof s !== 'object' || s === null || typeof (s as {file?: unknown}).file !== 'string')
      return 'manifest.json has a source without a "file" name'
  }
  if (o.files !== undefined && !Array.isArray(o.files)) return 'manifest.json "files" is not a list'
  return undefined
}
