// Where a Snapshot comes from: a snapshot directory, a bundle, or the live node.
import {readFile, stat} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {readSnapshotDir} from '../collect/snapshot-dir.js'
import {settleHealthy} from '../diagnose/healthy.js'
import {Context} from '../model/context.js'
import {buildSnapshot} from '../model/build.js'
import {RouteDoctorError} from '../model/errors.js'
import type {Snapshot, SourceFile} from '../model/types.js'

export interface SourceOptions {
  from?: string // DIR or BUNDLE.tar.gz; live when absent
  birdSocket?: string
  birdConfig?: string
  pools?: string[]
  ippools?: string // a Calico IPPool list file
  tunnelDev?: string
}

export interface LoadedSource {
  files: SourceFile[]
  origin: Snapshot['origin']
}

export async function loadSourceFiles(opts: SourceOptions): Promise<LoadedSource> {
  if (opts.from) {
    const info = await stat(opts.from).catch(() => undefined)
    if (!info) throw new RouteDoctorError(`${opts.from}: no such snapshot directory or bundle`, 2, 'E_FROM')
    if (info.isDirectory()) return {files: await readSnapshotDir(opts.from), origin: {kind: 'dir', path: opts.from}}
    const {readBundle} = await import('../bundle/tarball.js')
    const bundle = await readBundle(opts.from)
    return {files: bundle.files, origin: {kind: 'bundle', path: opts.from, collectedAt: bundle.manifest.collectedAt, host: bundle.manifest.host}}
  }
  const {collectLive} = await import('../collect/live.js')
  const files = await collectLive({birdSocket: opts.birdSocket, birdConfig: opts.birdConfig, tunnelDev: opts.tunnelDev})
  return {files, origin: {kind: 'live', collectedAt: new Date().toISOString(), host: os.hostname()}}
}

/** `aside`: set routes of the common healthy shapes aside unbuilt (model/aside.ts), for settleHealthy. */
export async function snapshotFrom(source: LoadedSource, opts: SourceOptions, aside = false): Promise<Snapshot> {
  let ippools: SourceFile | undefined
  if (opts.ippools) ippools = {name: path.basename(opts.ippools), text: await readIppoolsFile(opts.ippools)}
  return buildSnapshot(source.files, {pools: opts.pools, ippools, tunnelDev: opts.tunnelDev, origin: source.origin, aside})
}

/** The --ippools file's text; a usage error (exit 2) naming it when it cannot be read. */
export async function readIppoolsFile(file: string): Promise<string> {
  return readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new RouteDoctorError(`--ippools ${file}: cannot read (${error.code ?? error.message})`, 2, 'E_USAGE')
  })
}

export async function loadSnapshot(opts: SourceOptions): Promise<Snapshot> {
  return snapshotFrom(await loadSourceFiles(opts), opts)
}

/**
 * What `check` walks: the snapshot with its healthy prefixes settled in bulk (diagnose/healthy.ts) and the
 * rest as loadSnapshot gives it. Its report is loadSnapshot's, byte for byte.
 */
export async function loadCheckContext(opts: SourceOptions): Promise<Context> {
  return new Context(settleHealthy(await snapshotFrom(await loadSourceFiles(opts), opts, true)))
}
