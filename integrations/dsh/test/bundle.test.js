/**
 * The bundle in a fake dsh (support/fake-harness.js) against a real `memflow
 * serve`: tests/dsh/test_bundle.py starts the server, makes the account and
 * runs this file with MEMFLOW_URL, MEMFLOW_API_KEY, MEMFLOW_WORKSPACE and
 * MEMFLOW_COMMAND set. Assertions are on what the model would see.
 */

import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { format } from 'node:util'
import { join } from 'node:path'
import { test } from 'node:test'
import * as plugin from '../index.js'
import { FakeHarness } from '../support/fake-harness.js'

const { MEMFLOW_URL, MEMFLOW_API_KEY, MEMFLOW_WORKSPACE } = process.env
const live = Boolean(MEMFLOW_URL && MEMFLOW_API_KEY && MEMFLOW_WORKSPACE && process.env.MEMFLOW_COMMAND)
const needsServer = live ? {} : { skip: 'set MEMFLOW_URL, MEMFLOW_API_KEY, MEMFLOW_WORKSPACE and MEMFLOW_COMMAND (tests/dsh runs this)' }
const api = `${MEMFLOW_URL}/api/v1/workspaces/${MEMFLOW_WORKSPACE}`

async function call(method, path, body) {
  const response = await fetch(`${api}/${path}`, {
    method,
    headers: { Authorization: `Bearer ${MEMFLOW_API_KEY}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${await response.clone().text()}`)
  return response
}

/** Session ids the Python side checks in memflow's session log afterwards. */
function report(kind, sessionId) {
  if (process.env.MEMFLOW_DSH_REPORT) appendFileSync(process.env.MEMFLOW_DSH_REPORT, `${kind} ${sessionId}\n`)
}

function project(files) {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-memflow-'))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
  return dir
}

/** The messages a step entered, less dsh's runtime-context message. */
function entered(decision) {
  return decision.messages.filter(message => message.source?.kind !== 'runtime-context')
}

function loaded(config = {}) {
  const harness = new FakeHarness()
  harness.load(plugin, config)
  return harness
}

test('declared identity is re-read at every assembly; the preload is the first message, once', needsServer, async () => {
  const dir = project({
    '.dsh/context.yaml': 'systemPrompt:\n  - AGENT.md\npreload:\n  - memory/status.md\n',
    'AGENT.md': 'You are the release captain of project Heron.\nRelease notes use the {{version}} placeholder.\n',
    'memory/status.md': 'Status: the 2.0 branch is frozen; only fixes land.\n',
  })
  const harness = loaded()
  const agent = harness.agent(dir)
  harness.startSession(agent)

  const first = await harness.step(agent, ['Draft the 2.0 release checklist for Heron'])
  assert.match(first.system, /You are the release captain of project Heron\./)
  // Shown as written: dsh would fail the whole assembly on an unknown {{variable}}.
  assert.match(first.system, /use the \{\u200b\{version\}\} placeholder/)
  const [preload, typed] = first.decision.messages
  assert.match(preload.content[0].text, /Status: the 2\.0 branch is frozen; only fixes land\./)
  assert.equal(preload.role, 'user')
  assert.equal(typed.content[0].text, 'Draft the 2.0 release checklist for Heron')

  // Edited mid-session: the very next step's prompt carries the new text.
  writeFileSync(join(dir, 'AGENT.md'), 'You are the documentation editor of project Heron.\n')
  const continued = await harness.step(agent, [], { step: 2 })
  assert.match(continued.system, /You are the documentation editor of project Heron\./)
  assert.doesNotMatch(continued.system, /release captain/)

  const nextTurn = await harness.step(agent, ['Now update the changelog'], { turn: 2 })
  assert.equal(entered(nextTurn.decision).length, 1, 'the preload is given once per session')
  assert.match(nextTurn.system, /documentation editor/)
})

test('a broken declaration is said with its line number, and the session goes on', needsServer, async () => {
  const dir = project({
    '.dsh/context.yaml': 'systemPrompt:\n  - AGENT.md\n  bad: [unclosed\n',
    'AGENT.md': 'Identity that a broken declaration cannot deliver.\n',
  })
  const harness = loaded()
  const agent = harness.agent(dir)
  harness.startSession(agent)
  const step = await harness.step(agent, ['Summarise the open pull requests'])
  assert.equal(entered(step.decision).length, 1)
  const said = harness.warnings.map(args => format(...args)).join('\n')
  assert.match(said, /\.dsh\/context\.yaml:3: /)
})

test('core memory is frozen for a session; the next session sees the edit', needsServer, async () => {
  await call('POST', 'core/user/', { action: 'add', content: 'Prefers squash merges with a one-line title' })
  const dir = project({ 'README.md': 'no declaration here\n' })
  const harness = loaded()
  const agent = harness.agent(dir)
  harness.startSession(agent)
  const first = await harness.step(agent, ['Merge the feature branch for the parser fix'])
  assert.match(first.system, /Prefers squash merges with a one-line title/)

  await call('POST', 'core/user/', { action: 'add', content: 'Reviews only in the mornings' })
  const later = await harness.step(agent, ['And the docs branch too'], { turn: 2 })
  assert.match(later.system, /Prefers squash merges/)
  assert.doesNotMatch(later.system, /Reviews only in the mornings/, 'frozen for the session')

  const other = harness.agent(dir)
  harness.startSession(other)
  const fresh = await harness.step(other, ['Merge the release branch'])
  assert.match(fresh.system, /Reviews only in the mornings/)
})

test('the facts and lessons a prompt needs reach the model, each once', needsServer, async () => {
  await call('POST', 'memories/', { text: 'The staging database for Heron runs on db-staging-7.internal, port 6543.' })
  await call('POST', 'memories/', {
    text: 'pytest in the Heron repo: always pass -p no:cacheprovider, the checkout is read-only.',
    compartment: 'lessons',
  })
  const harness = loaded()
  const agent = harness.agent(project({ 'notes.txt': 'x\n' }))
  harness.startSession(agent)
  const step = await harness.step(agent, ['Which host runs the Heron staging database, and how do I run pytest in Heron?'])
  // The fact is given once: in the session's restore pack of recent activity, or
  // recalled for the prompt (memflow never gives one memory twice).
  const mentions = step.context.match(/db-staging-7\.internal, port 6543/g) || []
  assert.equal(mentions.length, 1, step.context)
  assert.equal((step.context.match(/-p no:cacheprovider/g) || []).length, 1, step.context)
  assert.doesNotMatch(step.system, /db-staging-7/, 'per-turn blocks are context, not the system prompt')
})

test('a large tool result is replaced by its projection; the original comes back byte for byte', needsServer, async () => {
  const lines = []
  for (let i = 0; i < 1500; i++) lines.push(`[build] compiling heron/core/part_${i}.c (${i % 17} warnings) — ok`)
  lines.splice(1234, 0, 'heron/core/part_1234.c:88:5: error: mismatched types, expected `u32`, found `i64` ✗')
  const original = `${lines.join('\n')}\n`
  const harness = loaded()
  const agent = harness.agent(project({ 'Cargo.toml': '[package]\nname = "heron"\n' }))
  harness.startSession(agent)
  await harness.step(agent, ['Build the Heron workspace and tell me what fails'])

  const seen = await harness.toolResult(agent, 'bash', { command: 'cargo build' }, original)
  assert.ok(seen.text.length < original.length / 4, `the model sees a projection (${seen.text.length} chars)`)
  assert.match(seen.text, /part_1234\.c:88:5: error: mismatched types/, 'the error line survives')
  const sha256 = createHash('sha256').update(original, 'utf8').digest('hex')
  assert.ok(seen.text.includes(sha256), 'the projection names the hash to retrieve the original by')

  const response = await call('GET', `compression/${sha256}/`)
  assert.deepEqual(Buffer.from(await response.arrayBuffer()), Buffer.from(original, 'utf8'))

  const small = await harness.toolResult(agent, 'bash', { command: 'echo ok' }, 'ok\n')
  assert.equal(small.text, 'ok\n', 'a small result is left as it is')
  const own = await harness.toolResult(agent, 'mcp__memflow__flowctx_retrieve', { hash: sha256 }, original)
  assert.equal(own.text, original, "memflow's own retrieval is never projected again")
})

test('turn end reaches memflow; after a compaction the handoff notes stand in for the history', needsServer, async () => {
  const harness = loaded()
  const agent = harness.agent(project({ 'x.txt': 'x\n' }))
  harness.startSession(agent)
  const prompts = [
    'Refactor the Heron config loader into two modules: parsing and validation',
    'The validation module must reject ports above 65535 with a clear message',
    'Keep the old load_config name as a thin wrapper for one release',
  ]
  for (const [index, prompt] of prompts.entries()) {
    await harness.step(agent, [prompt], { turn: index + 1 })
    const seen = await harness.toolResult(agent, 'edit', { file_path: 'heron/config.py' }, `edited heron/config.py for: ${prompt}`)
    assert.match(seen.text, /edited heron\/config\.py/)
    harness.event(agent, 'turn/end', { turn: index + 1, reason: { kind: 'completed' } })
  }
  report('stop', agent.id)

  harness.event(agent, 'compaction/start', { compactionId: 'c-1' })
  report('pre-compact', agent.id)
  // memflow's worker folds the history into a note; wait for it (a deadline, not a pause).
  await until(async () => (await (await call('GET', `sessions/${agent.id}/summaries/`)).json()).count > 0)
  harness.event(agent, 'compaction/end', { compactionId: 'c-1' })
  const context = await until(async () => {
    const { context } = await harness.assemble(agent)
    return context.includes('<flowctx-handoff-note') ? context : undefined
  })
  // The note holds the folded turns (memflow keeps the last ones whole).
  assert.match(context, /<flowctx-handoff-note node="[^"]+" turns="1-\d+"[^>]*>\n## TASK \/ GOAL\nRefactor the Heron config loader into two modules[\s\S]*heron\/config\.py[\s\S]*<\/flowctx-handoff-note>/)
})

test('a dead server never holds a step or a tool result', async () => {
  const port = await closedPort()
  const harness = loaded({ url: `http://127.0.0.1:${port}`, apiKey: 'k', workspace: 'w', declarations: false })
  const agent = harness.agent(project({ 'x.txt': 'x\n' }))
  harness.startSession(agent)
  const step = await harness.step(agent, ['Anything at all'])
  assert.deepEqual(entered(step.decision).map(m => m.content[0].text), ['Anything at all'])
  assert.equal(step.context, '')
  const seen = await harness.toolResult(agent, 'bash', {}, 'x'.repeat(50_000))
  assert.equal(seen.text, 'x'.repeat(50_000))
})

test('a hung server costs a turn one budget; the next session tries again', async () => {
  const hung = await hungServer()
  try {
    const url = `http://127.0.0.1:${hung.port}`
    const config = { url, apiKey: 'k', workspace: 'w', declarations: false, mcp: false, timeoutMs: 300 }
    const harness = loaded(config)
    const agent = harness.agent(project({ 'x.txt': 'x\n' }))
    harness.startSession(agent)
    const first = await harness.step(agent, ['First prompt while memflow hangs'])
    assert.deepEqual(entered(first.decision).map(m => m.content[0].text), ['First prompt while memflow hangs'])
    // session-start, then the prompt's own call; the tool result waits for no third.
    const seen = await harness.toolResult(agent, 'bash', {}, 'y'.repeat(50_000))
    assert.equal(seen.text, 'y'.repeat(50_000))
    assert.deepEqual(hung.lines.map(line => line.split(' ')[1]), ['/api/v1/hooks/session-start', '/api/v1/hooks/user-prompt'])
    // A new turn tries again: one slow moment never costs more than its turn.
    await harness.step(agent, ['Second prompt'], { turn: 2 })
    assert.equal(hung.requests(), 3)
    const said = harness.warnings.map(args => format(...args)).join('\n')
    assert.match(said, /did not answer session-start within 300 ms; dsh went on without it/)
    // Another dsh process on this machine is not told to skip memflow.
    const another = loaded(config)
    const other = another.agent(project({ 'y.txt': 'y\n' }))
    another.startSession(other)
    await another.step(other, ['A second harness process, same server'])
    assert.equal(hung.requests(), 5)
  } finally {
    hung.close()
  }
})

test('an unreachable server is said once and left alone', async () => {
  const port = await closedPort()
  const harness = loaded({ url: `http://127.0.0.1:${port}`, apiKey: 'k', workspace: 'w', declarations: false, mcp: false })
  for (const turn of [1, 2, 3]) {
    const agent = harness.agent(project({ 'x.txt': 'x\n' }))
    harness.startSession(agent)
    const step = await harness.step(agent, [`Prompt ${turn}`], { turn })
    assert.equal(entered(step.decision).length, 1)
  }
  const said = harness.warnings.map(args => format(...args))
  assert.equal(said.filter(line => /cannot be reached \(ECONNREFUSED\)/.test(line)).length, 1, said.join('\n'))
})

test("when memflow goes down mid-session, a turn reuses the last turn's context (FlyMemory)", async () => {
  const sockets = new Set()
  const server = createHttpServer((request, response) => {
    const blocks = request.url.endsWith('/session-start')
      ? [{ name: 'memflow:session', order: 41, text: '<memflow-session id="s">the session</memflow-session>' }]
      : [{ name: 'memflow:recall', order: 210, text: '<memflow-recall>Heron ships on Tuesdays.</memflow-recall>' }]
    request.resume()
    request.on('end', () => response.end(JSON.stringify({ blocks })))
  })
  server.on('connection', socket => sockets.add(socket))
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  const harness = loaded({ url: `http://127.0.0.1:${server.address().port}`, apiKey: 'k', workspace: 'w', declarations: false, mcp: false })
  const agent = harness.agent(project({ 'x.txt': 'x\n' }))
  harness.startSession(agent)
  const first = await harness.step(agent, ['When does Heron ship?'])
  assert.match(first.context, /Heron ships on Tuesdays\./)
  await new Promise(resolve => { server.close(resolve); for (const socket of sockets) socket.destroy() })

  const second = await harness.step(agent, ['And the docs?'], { turn: 2 })
  assert.match(second.context, /Heron ships on Tuesdays\./, 'the last summary stands while the server is down')
  assert.match(second.context, /the session/)
})

test("memflow's MCP tools are registered when listed, and call the server", needsServer, async () => {
  const harness = loaded()
  const agent = harness.agent(project({ 'x.txt': 'x\n' }))
  harness.startSession(agent)
  const step = await harness.step(agent, ['What do we know about Heron?'])
  assert.ok(step.tools.includes('mcp__memflow__flymemory_remember'), step.tools.join(', '))
  const remember = harness.tools.get('mcp__memflow__flymemory_remember')
  const value = await remember.execute(
    { text: 'Heron ships its docs from the docs/ folder on every merge.' },
    { signal: new AbortController().signal },
  )
  const [shown] = remember.output.render({}, value)
  assert.match(shown.text, /#\d+/, shown.text)
  await assert.rejects(
    harness.tools.get('mcp__memflow__flymemory_get_memory').execute({ memory_id: 999_999_999 }, {}),
  )
})

test('a cut bash output is kept whole, read from the log file dsh names', needsServer, async () => {
  const lines = []
  for (let i = 0; i < 4000; i++) lines.push(`[test] heron/tests/test_part_${i}.py::test_it PASSED`)
  lines.splice(42, 0, 'heron/tests/test_part_42.py::test_it FAILED: AssertionError: ports above 65535')
  const whole = `${lines.join('\n')}\n`
  const dir = mkdtempSync(join(tmpdir(), 'dsh-subprocess-'))
  const log = join(dir, 'dsh-subprocess-1-stdout.log')
  writeFileSync(log, whole)
  // What dsh's bash tool shows: the last 64 KiB, then where the rest is.
  const kept = Buffer.from(whole).subarray(-65_536).toString('utf8')
  const shown = `${kept}\n[output truncated; full output: ${log}]`
  const harness = loaded()
  const agent = harness.agent(project({ 'x.txt': 'x\n' }))
  harness.startSession(agent)
  await harness.step(agent, ['Run the Heron tests'])

  const seen = await harness.toolResult(agent, 'bash', { command: 'pytest' }, shown)
  assert.match(seen.text, /test_part_42\.py::test_it FAILED/, 'the failure dsh cut away is in the projection')
  const sha256 = createHash('sha256').update(whole, 'utf8').digest('hex')
  assert.ok(seen.text.includes(sha256), seen.text)
  const response = await call('GET', `compression/${sha256}/`)
  assert.deepEqual(Buffer.from(await response.arrayBuffer()), Buffer.from(whole, 'utf8'))

  // A path outside where dsh writes tool output is refused, and said.
  const elsewhere = `${kept}\n[output truncated; full output: /etc/passwd]`
  await harness.toolResult(agent, 'bash', { command: 'pytest' }, elsewhere)
  const said = harness.warnings.map(args => format(...args)).join('\n')
  assert.match(said, /only dsh's cut of that tool output is kept: \/etc\/passwd is outside/)
})

test('every open session ends when dsh exits', needsServer, async () => {
  const harness = loaded()
  const agent = harness.agent(project({ 'x.txt': 'x\n' }))
  harness.startSession(agent)
  await harness.step(agent, ['A short session'])
  harness.event(agent, 'turn/end', { turn: 1, reason: { kind: 'completed' } })
  await harness.dispose()
  report('stop', agent.id)
  report('session-end', agent.id)
})

/** `check()`'s first truthy answer, polled until a generous deadline (a hang, not speed). */
async function until(check, guardMs = 120_000) {
  const deadline = Date.now() + guardMs
  for (;;) {
    const value = await check()
    if (value) return value
    assert.ok(Date.now() < deadline, 'the condition never held')
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

function closedPort() {
  return new Promise((resolve) => {
    const server = createServer()
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** Accepts connections, reads the requests, never answers; counts the requests by their first line. */
function hungServer() {
  return new Promise((resolve) => {
    const sockets = new Set()
    const lines = []
    const server = createServer((socket) => {
      sockets.add(socket)
      socket.on('data', (data) => {
        const first = data.toString('latin1').split('\r\n', 1)[0]
        if (/^[A-Z]+ \S+ HTTP\/1\.1$/.test(first)) lines.push(first)
      })
      socket.on('error', () => {})
    })
    server.listen(0, '127.0.0.1', () => resolve({
      port: server.address().port,
      requests: () => lines.length,
      lines,
      close: () => { for (const s of sockets) s.destroy(); server.close() },
    }))
  })
}
