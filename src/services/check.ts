// `check`: the check run of a source (loadCheckRun, streamed by the command as JSON or text) and its
// node-problem-detector form.
import {loadCheckRun, type SourceOptions} from './load.js'

export {loadCheckRun}

/**
 * `check --npd`: one line of at most 80 characters and node-problem-detector's exit status. NPD shows stdout only, so
 * an input error is its Unknown, in one line there too.
 */
export async function npdCheck(source: SourceOptions): Promise<{line: string; exitCode: number}> {
  const {npdResult, npdUnknown} = await import('../render/npd.js')
  return loadCheckRun(source, false).then(npdResult, npdUnknown)
}
