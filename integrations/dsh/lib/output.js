/**
 * The whole output of a dsh bash call that dsh cut.
 *
 * dsh's bash tool keeps the last 64 KiB of a stream in memory and ends what
 * the model sees with `[output truncated; full output: <log file>]`. The
 * file holds the whole stream. It is read here, on the agent's machine,
 * under the rules `memflow hook` applies to Claude Code's persisted outputs
 * (memflow_site/client/hook.py): an absolute path inside the directories
 * dsh writes tool output to, a regular file, opened without following a
 * link and without blocking, no larger than the hook body cap. The server
 * never reads a path a request names: the bytes travel as `memflow_output`,
 * or the reason they cannot.
 */

import { constants, closeSync, fstatSync, openSync, readSync, realpathSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { isAbsolute, join, sep } from 'node:path'
import { createHash } from 'node:crypto'

const MARKER = /\n\[output truncated; full output: ([^\n\]]+)\]/g

/** Where dsh writes tool output: the temp dir (its subprocess logs and spills), /tmp, its home, the session's directory. */
export function outputRoots(cwd, env = process.env) {
  const roots = []
  for (const candidate of [tmpdir(), '/tmp', env.DSH_HOME || join(homedir(), '.dsh'), cwd]) {
    if (!candidate || !isAbsolute(candidate)) continue
    try {
      const root = realpathSync(candidate)
      if (root !== sep && !roots.includes(root)) roots.push(root)
    } catch { /* not there */ }
  }
  return roots
}

class Refused extends Error {}

/** The bytes of the log file `name`, or a thrown Refused saying why not. */
export function readLog(name, { roots, cap }) {
  if (!isAbsolute(name)) throw new Refused(`${name} is not an absolute path`)
  let real
  try {
    real = realpathSync(name)
  } catch (error) {
    throw new Refused(error.code === 'ENOENT' ? `${name} does not exist` : `${name} cannot be resolved (${error.code})`)
  }
  if (!roots.some(root => real === root || real.startsWith(root + sep))) {
    const where = real !== name ? ` (a link to ${real})` : ''
    throw new Refused(`${name}${where} is outside the directories dsh writes tool output to (${roots.join(', ')})`)
  }
  let fd
  try {
    // Non-blocking: a FIFO planted there must not hang the step.
    fd = openSync(real, constants.O_RDONLY | constants.O_NONBLOCK | (constants.O_NOFOLLOW ?? 0))
  } catch (error) {
    throw new Refused(`${name} cannot be opened (${error.code})`)
  }
  try {
    const info = fstatSync(fd)
    if (info.isDirectory()) throw new Refused(`${name} is a directory`)
    if (!info.isFile()) throw new Refused(`${name} is not a regular file`)
    if (info.size > cap) throw new Refused(overCap(name, info.size, cap))
    const chunks = []
    let total = 0
    for (;;) {
      const chunk = Buffer.alloc(Math.min(1 << 20, cap + 1 - total))
      const read = readSync(fd, chunk, 0, chunk.length, null)
      if (read === 0) break
      chunks.push(chunk.subarray(0, read))
      total += read
      if (total > cap) throw new Refused(overCap(name, total, cap)) // it grew after the stat
    }
    return Buffer.concat(chunks)
  } finally {
    closeSync(fd)
  }
}

function overCap(name, size, cap) {
  return `${name} holds ${size.toLocaleString('en')} bytes, over MEMFLOW_HOOK_MAX_BYTES (${cap.toLocaleString('en')})`
}

/**
 * `memflow_output` for a tool result dsh cut, or undefined when nothing was cut.
 * The whole is the result with each cut stream (what dsh kept, then its
 * marker) replaced by the log file it names — the file must end with what
 * dsh kept, or it is not this output's.
 * @returns {{ source: string, size?: number, sha256?: string, text?: string, base64?: string, refused?: string } | undefined}
 */
export function wholeOutput(text, { cwd, cap }) {
  const markers = [...text.matchAll(MARKER)]
  if (markers.length === 0) return undefined
  const roots = outputRoots(cwd)
  const parts = []
  let at = 0
  try {
    for (const marker of markers) {
      // A stream starts at the top, or after dsh's `[stderr]` line.
      const before = text.slice(at, marker.index)
      const stderr = before.lastIndexOf('[stderr]\n')
      const head = stderr >= 0 ? before.slice(0, stderr + '[stderr]\n'.length) : ''
      const kept = Buffer.from(stderr >= 0 ? before.slice(stderr + '[stderr]\n'.length) : before, 'utf8')
      const data = readLog(marker[1].trim(), { roots, cap })
      if (!data.subarray(data.length - kept.length).equals(kept)) {
        throw new Refused(`${marker[1].trim()} does not end with the output dsh showed`)
      }
      parts.push(Buffer.from(head, 'utf8'), data)
      at = marker.index + marker[0].length
    }
  } catch (error) {
    if (!(error instanceof Refused)) throw error
    return { source: 'dsh-output-log', refused: error.message }
  }
  parts.push(Buffer.from(text.slice(at), 'utf8'))
  const whole = Buffer.concat(parts)
  if (whole.length > cap) {
    return { source: 'dsh-output-log', size: whole.length, refused: overCap('the whole output', whole.length, cap) }
  }
  const entry = { source: 'dsh-output-log', size: whole.length, sha256: createHash('sha256').update(whole).digest('hex') }
  const decoded = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
  try {
    entry.text = decoded.decode(whole)
  } catch {
    entry.base64 = whole.toString('base64')
  }
  return entry
}
