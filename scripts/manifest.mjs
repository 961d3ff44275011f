// Writes oclif.manifest.json after a build, so oclif finds a command without importing every
// command file at start-up (the manifest holds their flags and descriptions).
import {rmSync, writeFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'
import path from 'node:path'

import {Config} from '@oclif/core'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const file = path.join(root, 'oclif.manifest.json')
rmSync(file, {force: true}) // never build a manifest from a stale one
const config = await Config.load(root)
const manifest = config.rootPlugin.manifest
writeFileSync(file, JSON.stringify(manifest, null, 2) + '\n')
console.error(`oclif.manifest.json: ${Object.keys(manifest.commands).length} commands`)
