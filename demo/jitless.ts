/**
 * The page's Content-Security-Policy forbids `eval`, which zod would otherwise probe
 * (and the browser would log as a violation). Evaluated before any schema parses.
 */
import { z } from "zod";

z.config({ jitless: true });
