-- wrk script: optional per-request headers/body from the environment, and one JSON line of results.
-- BENCH_METHOD, BENCH_BODY_FILE, BENCH_HEADERS ("Name: value|Name: value"), BENCH_UNIQUE_HEADER
-- (a header given a fresh value on every request, e.g. X-GitHub-Delivery).
local method = os.getenv("BENCH_METHOD") or "GET"
local unique = os.getenv("BENCH_UNIQUE_HEADER")
local body = nil
local headers = {}
local counter = 0
local thread_id = 0
local threads = {}

local body_file = os.getenv("BENCH_BODY_FILE")
if body_file and body_file ~= "" then
  local f = assert(io.open(body_file, "rb"))
  body = f:read("*a")
  f:close()
end
for pair in string.gmatch(os.getenv("BENCH_HEADERS") or "", "[^|]+") do
  local name, value = string.match(pair, "^%s*([^:]+):%s*(.-)%s*$")
  if name then headers[name] = value end
end

function setup(thread)
  thread:set("thread_id", #threads + 1)
  table.insert(threads, thread)
end

function request()
  if unique and unique ~= "" then
    counter = counter + 1
    headers[unique] = string.format("bench-%d-%d-%d-%d", os.time(), math.random(1, 1e9), thread_id, counter)
  end
  return wrk.format(method, nil, headers, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, ' ..
    '"errors_status": %d, "errors_connect": %d, "errors_read": %d, "errors_write": %d, "errors_timeout": %d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
