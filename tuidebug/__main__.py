from tuidebug.cli import main

raise SystemExit(main())
