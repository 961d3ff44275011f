// Errors a user can act on. The CLI prints `message` and exits with `exit`; never a stack trace.

export class RouteDoctorError extends Error {
  constructor(message: string, readonly exit: number = 2, readonly code = 'E_ROUTEDOCTOR') {
    super(message)
    this.name = 'RouteDoctorError'
  }
}

// Input that does not parse: names the file, the line and what was expected.
export class ParseError extends RouteDoctorError {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly expected: string,
    readonly found?: string,
  ) {
    super(
      `${file}:${line}: expected ${expected}${found === undefined ? '' : `, found ${JSON.stringify(found.length > 80 ? found.slice(0, 77) + '...' : found)}`}`,
      2,
      'E_PARSE',
    )
    this.name = 'ParseError'
  }

  /** The same error naming `file` instead: the path the user gave, where the parser knew only the snapshot's name. */
  at(file: string): ParseError {
    return new ParseError(file, this.line, this.expected, this.found)
  }
}

// The Kubernetes API server did not answer, or refused (--kube): an agent reads it again later, a command ends.
export class KubeRequestError extends RouteDoctorError {
  constructor(message: string) {
    super(message, 2, 'E_KUBE')
    this.name = 'KubeRequestError'
  }
}

export class UsageError extends RouteDoctorError {
  constructor(message: string) {
    super(message, 2, 'E_USAGE')
    this.name = 'UsageError'
  }
}
