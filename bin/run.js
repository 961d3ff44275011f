#!/usr/bin/env node
import {execute} from '@oclif/core'

// A bare `routedoctor` on a terminal starts the interactive UI (DESIGN §2).
if (process.argv.length === 2 && process.stdout.isTTY && process.stdin.isTTY) process.argv.push('ui')

await execute({dir: import.meta.url})
