"""Training summaries in MindSpore's format (MindSpore's mindspore.train.summary), which
MindInsight reads: SummaryRecord writes them, read_summary reads a file back."""
from pijit.train.summary._event_file import SummaryFormatError, read_summary
from pijit.train.summary.summary_record import SummaryRecord

__all__ = ["SummaryRecord", "read_summary", "SummaryFormatError"]
