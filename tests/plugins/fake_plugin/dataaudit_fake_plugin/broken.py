raise ImportError("this plugin module is broken on purpose")
