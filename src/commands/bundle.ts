import {Flags} from '@oclif/core'

import {BaseCommand, sourceFlags, sourceOptions} from '../cli/base.js'

export default class Bundle extends BaseCommand {
  static summary = 'Write a support bundle (.tar.gz): every raw input, the parsed model, the report and a manifest'
  static description = `\`routedoctor check --from BUNDLE.tar.gz\` replays it offline to the same report (explain, fix and ui take --from too).
--redact replaces addresses, host names and MACs with stable pseudonyms that keep prefix lengths, containment and
subnet membership (a redacted bundle diagnoses the same); BGP passwords are removed from the BIRD config in every bundle.`
  static examples = [
    '<%= config.bin %> bundle',
    '<%= config.bin %> bundle --redact -o /tmp',
    '<%= config.bin %> bundle --from examples/bird2-ecmp-not-tunneled -o out.tar.gz',
  ]
  static flags = {
    ...sourceFlags,
    output: Flags.string({
      char: 'o',
      description: 'bundle file (.tar.gz) or directory; default routedoctor-HOST-YYYYMMDD-HHMMSS.tar.gz here',
      helpValue: 'FILE|DIR',
    }),
    redact: Flags.boolean({
      description: 'pseudonymise addresses, host names and MACs consistently across every file',
      default: false,
    }),
    'mapping-file': Flags.string({
      description: 'with --redact: keep the pseudonym mapping in this local file (never in the bundle)',
      helpValue: 'FILE',
    }),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Bundle)
    this.jsonOutput = flags.json
    const {createBundle} = await import('../services/bundle.js') // only this command needs it: not at start-up
    const result = await createBundle({
      ...sourceOptions(flags), out: flags.output, redact: flags.redact, mappingFile: flags['mapping-file'],
      command: ['bundle', ...this.argv], toolVersion: this.config.version,
      progress: (line) => process.stderr.write(`${line}\n`),
    })
    if (flags.json) this.printJson(result)
    else this.print(result.path)
  }
}
