// yaml, loaded on first use and synchronously (the parsers are synchronous): most runs read no
// YAML IPPool file, and start-up time matters. In the CLI bundle, scripts/bundle.mjs replaces this
// module with one that requires dist/app/lazy/yaml.cjs, yaml bundled into one file (many modules otherwise).
import {createRequire} from 'node:module'

import type * as YamlModule from 'yaml'

export function loadYaml(): typeof YamlModule {
  return createRequire(import.meta.url)('yaml') as typeof YamlModule
}
