/*
 * test_code_scan.c - which runs the plain zygote may take: code importing
 * only the standard library (and mcpx) is plain; anything else, or an
 * import the scan cannot read (__import__, import_module), is not.
 */
#include <string.h>

#include "check.h"
#include "code_scan.h"

static bool plain(const char *code)
{
	return mcpx_code_plain(code, strlen(code));
}

int main(void)
{
	CHECK(plain(""));
	CHECK(plain("print(1)\n"));
	CHECK(plain("import os, sys\nimport json as j\nprint(os.getpid())\n"));
	CHECK(plain("from collections import defaultdict, Counter\n"));
	CHECK(
	    plain("from os.path import (join,\n    exists)\nimport xml.etree.ElementTree as ET\n"));
	CHECK(plain("def f():\n    import re\n    return re\n"));
	CHECK(plain("import mcpx\nr = mcpx.fetch('https://example.com/')\n"));
	CHECK(plain("if True: from math import pi\n"));
	CHECK(plain("from . import sibling\n"));
	/* raise/yield from are no imports. */
	CHECK(plain("try:\n    x = 1\nexcept KeyError as e:\n    raise ValueError('x') from e\n"));
	CHECK(plain("important = 1\nreimport = 2\nfromage = 3\n"));

	CHECK(!plain("import numpy\n"));
	CHECK(!plain("import os, numpy as np\n"));
	CHECK(!plain("import matplotlib.pyplot as plt\nplt.plot([1])\nplt.show()\n"));
	CHECK(!plain("from pandas import DataFrame\n"));
	CHECK(!plain("import os; from scipy import stats\n"));
	CHECK(!plain("def f():\n    from PIL import Image\n"));
	CHECK(!plain("m = __import__('numpy')\n"));
	CHECK(!plain("import importlib\nm = importlib.import_module('numpy')\n"));
	CHECK(!plain("import mcpx_figures\n"));
	/* Text the scan reads as code: slower, never wrong. */
	CHECK(!plain("# import numpy would be nice\n"));
	CHECK_DONE();
}
