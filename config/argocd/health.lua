-- Argo CD health of every kind of prompts.persona-operator.dev, read from
-- the kstatus conditions Ready, Reconciling and Stalled; a Persona whose
-- pin is honoured (Pinned=True) is Suspended: it delivers an earlier
-- revision on purpose. A Persona's canary (Canary) is read before
-- Reconciling: Progressing while its steps run, Suspended while it waits
-- for a promote, Degraded once aborted, until a newer revision.
local hs = {}

local generation = obj.metadata.generation
local status = obj.status
if status == nil or status.conditions == nil or #status.conditions == 0 then
  hs.status = "Progressing"
  hs.message = "waiting for the controller to report status"
  return hs
end

local conditions = {}
for _, c in ipairs(status.conditions) do
  conditions[c.type] = c
end
local ready = conditions["Ready"]
local reconciling = conditions["Reconciling"]
local stalled = conditions["Stalled"]
local pinned = conditions["Pinned"]
local canary = conditions["Canary"]

local function waitForGeneration()
  hs.status = "Progressing"
  hs.message = "waiting for the controller to observe generation " .. tostring(generation)
  return hs
end

-- A status written for an older spec says nothing about the current one.
if status.observedGeneration ~= nil and status.observedGeneration ~= generation then
  return waitForGeneration()
end

-- Stalled is checked first: it needs a change to another object, whereas
-- Reconciling settles by itself.
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = stalled.message or ""
  if stalled.reason ~= nil and stalled.reason ~= "" then
    hs.message = stalled.reason .. ": " .. hs.message
  end
  return hs
end

if canary ~= nil and canary.observedGeneration == generation then
  if canary.status == "True" and canary.reason == "Paused" then
    hs.status = "Suspended"
  elseif canary.status == "True" then
    hs.status = "Progressing"
  elseif canary.reason == "Aborted" then
    hs.status = "Degraded"
  end
  if hs.status ~= nil then
    hs.message = canary.message or ""
    return hs
  end
end

if reconciling ~= nil and reconciling.status == "True" then
  hs.status = "Progressing"
  hs.message = reconciling.message or reconciling.reason or "reconciling"
  return hs
end

if ready == nil then
  hs.status = "Progressing"
  hs.message = "waiting for the Ready condition"
  return hs
end
if ready.observedGeneration ~= generation then
  return waitForGeneration()
end
if ready.status == "True" and pinned ~= nil and pinned.status == "True" then
  hs.status = "Suspended"
elseif ready.status == "True" then
  hs.status = "Healthy"
elseif ready.status == "False" then
  -- The controller pairs Ready=False with Reconciling or Stalled; alone it
  -- still means the object is not serving its spec.
  hs.status = "Degraded"
else
  hs.status = "Progressing"
end
hs.message = ready.message or ""
return hs
