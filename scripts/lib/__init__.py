"""What the scripts share: processes started in the background and stopped by pid
(``processes``), the ports they listen on (``ports``) and the settings they print
(``exports``). Standard library only: the scripts run before the project's environment
exists, with whatever ``python3`` the machine has."""
