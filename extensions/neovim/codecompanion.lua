-- CodeCompanion.nvim: Claude Code and Codex run by `lockroom acp`, one sandbox per chat.
-- Merge into your own require("codecompanion").setup({...}); see README.md beside this file.
--
-- Each adapter extends CodeCompanion's preset ("claude_code", "codex") and replaces its
-- commands, so the agent starts inside the sandbox instead of on this machine.

-- lockroom's log (CodeCompanion does not keep an agent's stderr): a file in Neovim's log folder.
local lockroom_log = vim.fn.stdpath("log") .. "/lockroom-acp.log"

local function lockroom(kit, agent, ...)
  return { "lockroom", "--log-file", lockroom_log, "acp", "--kit", kit, "--", agent, ... }
end

require("codecompanion").setup({
  adapters = {
    acp = {
      lockroom_claude = function()
        return require("codecompanion.adapters").extend("claude_code", {
          name = "lockroom_claude",
          formatted_name = "Claude Code (lockroom)",
          commands = {
            default = lockroom("claude", "claude-agent-acp"),
            -- The preset also has a "yolo" command; keep it inside the sandbox as well.
            yolo = lockroom("claude", "claude-agent-acp", "--yolo"),
          },
          defaults = {
            -- Milliseconds CodeCompanion waits for initialize and session/new. The first start
            -- builds the guest image and the kit's layers, which takes minutes: build them once
            -- from a terminal first (README.md), or raise this.
            timeout = 120000,
          },
          env = {
            -- A plain name is read from Neovim's environment; lockroom hands the value to its
            -- egress proxy, and the guest only sees a stand-in.
            ANTHROPIC_API_KEY = "ANTHROPIC_API_KEY",
          },
        })
      end,
      lockroom_codex = function()
        return require("codecompanion.adapters").extend("codex", {
          name = "lockroom_codex",
          formatted_name = "Codex (lockroom)",
          commands = {
            default = lockroom("codex", "codex-acp"),
          },
          defaults = {
            timeout = 120000,
          },
          env = {
            OPENAI_API_KEY = "OPENAI_API_KEY",
          },
        })
      end,
    },
  },
  interactions = {
    chat = {
      adapter = "lockroom_claude",
    },
  },
})
