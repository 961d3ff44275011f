import {BaseCommand} from '../cli/base.js'
import {bundleFlags, bundleOptions} from '../cli/flags.js'

export default class Bundle extends BaseCommand {
  static summary = 'Write a support bundle (.tar.gz): every raw input, the parsed model, the report and a manifest'
  static description =
    '`routedoctor check --from BUNDLE.tar.gz` replays it offline to the same report (explain, fix and ui take --from ' +
    'too).\n--redact replaces addresses, host names and MACs with stable pseudonyms that keep prefix lengths, ' +
    'containment and subnet membership (a redacted bundle diagnoses the same); BGP passwords are removed from the ' +
    'BIRD config in every bundle.'
  static examples = [
    '<%= config.bin %> bundle',
    '<%= config.bin %> bundle --redact -o /tmp',
    '<%= config.bin %> bundle --from examples/bird2-ecmp-not-tunneled -o out.tar.gz',
  ]
  static flags = bundleFlags

  async run(): Promise<void> {
    const {flags} = await this.parse(Bundle)
    this.jsonOutput = flags.json
    const {createBundle} = await import('../services/bundle.js') // only this command needs it: not at start-up
    const result = await createBundle(bundleOptions(flags, this.argv, this.config.version))
    if (flags.json) this.printJson(result)
    else this.print(result.path)
  }
}
