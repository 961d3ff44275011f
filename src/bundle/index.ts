// Support bundles (DESIGN §6): one import for the `bundle` command and `--from BUNDLE.tar.gz`.
export {buildManifest, sha256, type Manifest, type ManifestFile, type ManifestInput, type ManifestSource} from './manifest.js'
export {
  collectAnchors,
  createRedactor,
  detectHostnames,
  redactBundleInput,
  redactFiles,
  removeBirdPasswords,
  scrubSecrets,
  type RedactOptions,
  type Redactor,
  type RedactorOptions,
} from './redact.js'
export {defaultBundleName, packBundle, parseBundle, readBundle, writeBundle, type Bundle, type BundleInput} from './tarball.js'
