// What every command shares: the source flags of DESIGN §2, --json, and error handling that
// prints a clear message with the right exit status (2 for bad input or usage), never a stack.
import {Command, Flags, Errors} from '@oclif/core'

import {checkOverlayTable, checkTunnelDev} from '../snapshot/build.js'
import {DEFAULT_FIX_PROTOCOL_NUMBER, DEFAULT_OVERLAY_TABLE, DEFAULT_TUNNEL_DEV} from '../model/snapshot-index.js'
import {RouteDoctorError} from '../model/errors.js'
import {jsonText, writeCheckJson, writeJson, writeLines, type ElementWriters} from '../render/json.js'
import {palette} from '../render/style.js'
import {renderCheckLines} from '../render/text.js'
import type {SourceOptions} from '../services/load.js'
import type {CheckRun} from '../report/report.js'

export const sourceFlags = {
  from: Flags.string({
    description: 'offline: a snapshot directory or a bundle (.tar.gz) instead of the live node',
    helpValue: 'DIR|BUNDLE.tar.gz',
  }),
  'bird-socket': Flags.string({
    description:
      'BIRD control socket (default: the first of /var/run/calico/bird.ctl, /run/bird/bird.ctl, /var/run/bird/bird.ctl, /run/bird.ctl)',
    helpValue: 'PATH',
  }),
  'bird-conf': Flags.string({
    description: 'live: the BIRD configuration file in force (default: Calico\'s or /etc/bird/bird.conf)',
    helpValue: 'PATH',
  }),
  pool: Flags.string({
    description: 'a tunnel pool, repeatable; mode defaults to ipip',
    helpValue: 'CIDR[=ipip|vxlan|none]',
    multiple: true,
  }),
  ippools: Flags.string({description: 'Calico IPPool list (YAML or JSON)', helpValue: 'FILE'}),
  // no oclif default: a flag not given leaves a bundle's recorded device (overlay-settings.json) in force
  'tunnel-dev': Flags.string({
    description: `the tunnel device [default: ${DEFAULT_TUNNEL_DEV}, or what --from's bundle recorded]`,
    helpValue: 'NAME',
  }),
  json: Flags.boolean({description: 'machine output on stdout (schema 1), nothing else there', default: false}),
  calico: Flags.string({description: 'Calico\'s cluster truth: a directory of kubectl get RESOURCE -o json files', helpValue: 'DIR'}),
  kube: Flags.boolean({description: 'Calico\'s cluster truth read live from the Kubernetes API (kubeconfig or in-cluster), read-only', default: false}),
  node: Flags.string({description: 'which Kubernetes node this is (default: the Node whose IPv4Address is one of this host\'s, else the host name)', helpValue: 'NAME'}),
  // every command reads routedoctor's own routes by these: a correction applied with others is otherwise another
  // owner's
  // no oclif default: a flag not given leaves a bundle's recorded setting (overlay-settings.json) in force
  protocol: Flags.integer({
    description: 'protocol number routedoctor\'s routes carry (findable, removable) ' +
      `[default: ${DEFAULT_FIX_PROTOCOL_NUMBER}, or what --from's bundle recorded]`,
    min: 1, max: 255, helpValue: 'NUMBER',
  }),
  table: Flags.integer({
    description: 'the overlay table routedoctor\'s routes live in (outside 1-255, not BIRD\'s kernel table) ' +
      `[default: ${DEFAULT_OVERLAY_TABLE}, or what --from's bundle recorded]`,
    helpValue: 'TABLE',
  }),
}

export function sourceOptions(flags: {
  from?: string
  'bird-socket'?: string
  'bird-conf'?: string
  pool?: string[]
  ippools?: string
  'tunnel-dev'?: string
  calico?: string
  kube?: boolean
  node?: string
  protocol?: number
  table?: number
}): SourceOptions {
  return {
    from: flags.from,
    birdSocket: flags['bird-socket'],
    birdConfig: flags['bird-conf'],
    pools: flags.pool,
    ippools: flags.ippools,
    tunnelDev: flags['tunnel-dev'] === undefined ? undefined : checkTunnelDev(flags['tunnel-dev']),
    calico: flags.calico,
    kube: flags.kube,
    node: flags.node,
    fixProtocol: flags.protocol,
    overlayTable: checkOverlayTable(flags.table),
  }
}

/** The source of a command that judges (check, explain, fix): refused without the kernel's routes. */
export function judged(opts: SourceOptions): SourceOptions {
  return {...opts, requireKernelRoutes: true}
}

export abstract class BaseCommand extends Command {
  protected jsonOutput = false

  /**
   * JSON in the one shape every command writes (writeJson's: a top-level key or array element per line, compact
   * within).
   */
  protected printJson(value: unknown): void {
    process.stdout.write(jsonText(value))
  }

  /** Large reports: written array element by element (same JSON as printJson). */
  protected async streamJson(value: object, elements?: ElementWriters): Promise<void> {
    await writeJson(process.stdout, value as Record<string, unknown>, elements)
  }

  /** `check`'s report as it runs, JSON or text, streamed (also `ui`'s without a terminal). Returns its exit status. */
  protected async writeCheck(run: CheckRun, json: boolean): Promise<0 | 1> {
    // each prefix is diagnosed as it is written: a full table's findings are never all in memory
    if (json) await writeCheckJson(process.stdout, run)
    else await this.streamLines(renderCheckLines(run, palette()))
    return run.summary().exitCode
  }

  /** Large text output: lines written in chunks, honouring backpressure. */
  protected async streamLines(lines: Iterable<string>): Promise<void> {
    await writeLines(process.stdout, lines)
  }

  protected print(text: string): void {
    process.stdout.write(text.endsWith('\n') ? text : text + '\n')
  }

  async catch(error: Error & {exitCode?: number; oclif?: {exit?: number}; code?: string}): Promise<void> {
    // oclif's own flag/argument errors are usage errors: exit 2
    if (error instanceof RouteDoctorError || error instanceof Errors.CLIError) {
      const exit = error instanceof RouteDoctorError ? error.exit : (error.oclif?.exit ?? 2)
      // oclif's note on flags taking several values is about argument order, not about what went wrong
      const message = error.message
        .replace(/^Error: /, '')
        .replace(/\n+Note: --\S+ allows multiple values\.[\s\S]*?(?=\nSee more help|$)/, '')
      if (this.jsonOutput || this.argv.includes('--json'))
        this.printJson({schema: 1, error: {code: error.code ?? 'E_USAGE', message}})
      process.stderr.write(`routedoctor: ${message}\n`)
      if (error instanceof Errors.ExitError) throw error
      this.exit(exit)
    }
    // anything else is a bug: exit 70 (EX_SOFTWARE, not check's 1 for findings), one line, the stack only when asked
    // for
    const message = error.message.split('\n')[0] || error.name
    if (this.jsonOutput || this.argv.includes('--json'))
      this.printJson({schema: 1, error: {code: 'E_INTERNAL', message}})
    process.stderr.write(
      `routedoctor: internal error: ${message}; please report it${debugging() ? '' : ' (DEBUG=routedoctor shows the stack)'}\n`,
    )
    if (debugging()) process.stderr.write(`${error.stack}\n`)
    this.exit(70)
  }
}

/** DEBUG names routedoctor (or everything, as the debug module reads it): internal errors show their stack. */
function debugging(): boolean {
  return (process.env.DEBUG ?? '')
    .split(/[\s,]+/)
    .some((name) => name === 'routedoctor' || name === '*' || name === '1')
}
