/**
 * The directory's declaration (`.dsh/context.yaml`), resolved on this machine.
 *
 * memflow has one resolver (parser, inherit, `${device}`, `DSH_CONTEXT_*`,
 * legacy `memory/`); the bundle runs it as `memflow context --json` rather
 * than keeping a second copy of the rules in JavaScript. Identity files are
 * then read again at every prompt assembly, so an edit reaches the next step.
 */

import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'

/**
 * The assembly `memflow context --json` prints for `cwd`, or `undefined` when
 * nothing is declared there or the resolver cannot run in time.
 * @returns {Promise<{ assembly?: object, error?: string }>}
 */
export function resolveDeclaration({ command, cwd, delegationDepth = 0, timeoutMs, env = process.env }) {
  return new Promise((resolve) => {
    execFile(
      command,
      ['context', '--json', '--delegation-depth', String(delegationDepth), cwd],
      { timeout: timeoutMs, env, maxBuffer: 16 * 1024 * 1024, windowsHide: true },
      (error, stdout, stderr) => {
        if (error) {
          const why = error.killed ? `no answer within ${timeoutMs} ms` : String(stderr || error.message).trim()
          resolve({ error: `${command} context: ${why}` })
          return
        }
        try {
          const assembly = JSON.parse(stdout)
          const empty = (assembly.sections ?? []).length === 0 && !assembly.preload
          resolve(empty ? { warnings: assembly.warnings ?? [] } : { assembly })
        } catch {
          resolve({ error: `${command} context --json printed no JSON` })
        }
      },
    )
  })
}

/**
 * A section's text as the file holds it now. A file that cannot be read keeps
 * the text it had when resolved, so a half-written save never empties it.
 */
export function sectionText(section) {
  if (section.kind !== 'identity' || typeof section.source !== 'string') return section.text ?? ''
  try {
    return readFileSync(section.source, 'utf8')
  } catch {
    return section.text ?? ''
  }
}
