// Writes oclif.manifest.json after a build (after scripts/bundle.mjs: oclif reads the commands from
// dist/app/cli.js, package.json oclif.commands), so oclif knows every command's flags and descriptions
// without asking the command classes for them at start-up.
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
