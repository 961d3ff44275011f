// The CLI's entry: bin/run.js imports the bundle of this file (dist/app/cli.js, built by
// scripts/bundle.mjs), whose start-up chunk holds oclif and every command, so start-up reads a few
// files (that chunk comes through V8's code cache: src/cli/code-cache.ts) instead of resolving and
// compiling ~160 CommonJS modules one by one. oclif finds the commands
// through the "explicit" discovery strategy (package.json oclif.commands → COMMANDS below); what
// only some commands need (Ink and React, the netlink binding, live collection, fix and bundle
// services) is behind dynamic import() in those commands and stays out of the start-up chunk.
import {execute, settings} from '@oclif/core'

import Bundle from '../commands/bundle.js'
import Check from '../commands/check.js'
import Explain from '../commands/explain.js'
import Fix from '../commands/fix.js'
import Fleet from '../commands/fleet.js'
import Ui from '../commands/ui.js'

export const COMMANDS = {bundle: Bundle, check: Check, explain: Explain, fix: Fix, fleet: Fleet, ui: Ui}

/** Run the CLI; `dir` is bin/run.js's import.meta.url (oclif finds package.json from it). */
export async function run(dir: string): Promise<void> {
  // The commands are compiled into the bundle: never let oclif look for their TypeScript sources
  // (by default it registers tsx and maps dist/ to src/ when NODE_ENV is test or development).
  settings.enableAutoTranspile = false
  // A bare `routedoctor` on a terminal starts the interactive UI (DESIGN §2).
  if (process.argv.length === 2 && process.stdout.isTTY && process.stdin.isTTY) process.argv.push('ui')
  await execute({dir})
}
