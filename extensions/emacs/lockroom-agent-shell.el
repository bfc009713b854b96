;;; lockroom-agent-shell.el --- agent-shell agents that run in lockroom sandboxes -*- lexical-binding: t; -*-

;;; Commentary:

;; Two agent-shell agents, Claude Code and Codex, started through `lockroom acp': each shell
;; gets its own lockroom sandbox, and your files change only when you approve the diff at the
;; end of a turn.  See README.md beside this file.
;;
;; Load it after agent-shell:
;;   (with-eval-after-load 'agent-shell (load "/path/to/lockroom-agent-shell"))
;; then M-x lockroom-agent-shell-start-claude, or M-x agent-shell and pick "Claude (lockroom)".

;;; Code:

(require 'acp)
(require 'agent-shell)

(defvar lockroom-agent-shell-claude-command
  ;; --log-level warn: acp.el hands everything the agent writes on stderr to agent-shell as an
  ;; error, and lockroom logs at info level by default.
  '("lockroom" "--log-level" "warn" "acp" "--kit" "claude" "--" "claude-agent-acp")
  "Command line that runs Claude Code in a lockroom sandbox.")

(defvar lockroom-agent-shell-codex-command
  '("lockroom" "--log-level" "warn" "acp" "--kit" "codex" "--" "codex-acp")
  "Command line that runs Codex in a lockroom sandbox.")

(defvar lockroom-agent-shell-environment nil
  "Extra environment for lockroom, as a list of \"NAME=VALUE\" strings.
acp.el adds these to Emacs's `process-environment'.  lockroom reads
ANTHROPIC_API_KEY (Claude) and OPENAI_API_KEY (Codex) from there, e.g.:

  (setq lockroom-agent-shell-environment
        (agent-shell-make-environment-variables
         \"ANTHROPIC_API_KEY\"
         (auth-source-pass-get \\='secret \"anthropic-api-key\")))")

(defun lockroom-agent-shell--client-maker (command)
  "Return a client maker that starts COMMAND, a list of strings."
  (lambda (buffer)
    (acp-make-client :command (car command)
                     :command-params (cdr command)
                     :environment-variables lockroom-agent-shell-environment
                     :context-buffer buffer)))

(defun lockroom-agent-shell-make-claude-config ()
  "Agent config: Claude Code in a lockroom sandbox."
  (agent-shell-make-agent-config
   :identifier 'lockroom-claude
   :mode-line-name "Claude (lockroom)"
   :buffer-name "Claude (lockroom)"
   :shell-prompt "Claude (lockroom)> "
   :shell-prompt-regexp "Claude (lockroom)> "
   :client-maker (lockroom-agent-shell--client-maker lockroom-agent-shell-claude-command)
   :install-instructions "Install lockroom (built from source) and put it on PATH; `lockroom doctor' checks the machine."))

(defun lockroom-agent-shell-make-codex-config ()
  "Agent config: Codex in a lockroom sandbox."
  (agent-shell-make-agent-config
   :identifier 'lockroom-codex
   :mode-line-name "Codex (lockroom)"
   :buffer-name "Codex (lockroom)"
   :shell-prompt "Codex (lockroom)> "
   :shell-prompt-regexp "Codex (lockroom)> "
   :client-maker (lockroom-agent-shell--client-maker lockroom-agent-shell-codex-command)
   :install-instructions "Install lockroom (built from source) and put it on PATH; `lockroom doctor' checks the machine."))

;; Offer both in M-x agent-shell (its list of config makers).
(add-to-list 'agent-shell-agent-configs #'lockroom-agent-shell-make-claude-config t)
(add-to-list 'agent-shell-agent-configs #'lockroom-agent-shell-make-codex-config t)

(defun lockroom-agent-shell-start-claude ()
  "Start a Claude Code shell in a lockroom sandbox."
  (interactive)
  (agent-shell-start :config (lockroom-agent-shell-make-claude-config)))

(defun lockroom-agent-shell-start-codex ()
  "Start a Codex shell in a lockroom sandbox."
  (interactive)
  (agent-shell-start :config (lockroom-agent-shell-make-codex-config)))

(provide 'lockroom-agent-shell)

;;; lockroom-agent-shell.el ends here
