// ApprovalNotifier: a network question (the core's ApprovalQuestion) as a sticky notification
// with one button per choice lockroom offers. Dismissing it is a deny; when lockroom stops
// waiting (its deadline, or the sandbox ending) the core withdraws the question and the
// notification expires, so no button answers a request that is gone.
package dev.lockroom.intellij;

import com.intellij.notification.Notification;
import com.intellij.notification.NotificationAction;
import com.intellij.notification.NotificationGroupManager;
import com.intellij.notification.NotificationType;
import com.intellij.openapi.application.ApplicationManager;
import com.intellij.openapi.project.Project;
import dev.lockroom.core.approvals.ApprovalQuestion;
import dev.lockroom.core.approvals.Approvals;
import dev.lockroom.core.rpc.CancelToken;
import dev.lockroom.protocol.NetworkApproveResult;
import java.util.concurrent.CompletableFuture;

final class ApprovalNotifier implements Approvals.Asker {
  private final Project project;

  ApprovalNotifier(Project project) {
    this.project = project;
  }

  @Override
  public CompletableFuture<NetworkApproveResult.Decision> ask(ApprovalQuestion q, CancelToken withdrawn) {
    CompletableFuture<NetworkApproveResult.Decision> answer = new CompletableFuture<>();
    ApplicationManager.getApplication().invokeLater(() -> {
      if (answer.isDone()) return;
      Notification n = NotificationGroupManager.getInstance().getNotificationGroup("lockroom.approvals")
          .createNotification("Network access", q.message() + " (" + q.remainingMs() / 1000 + " s to answer)", NotificationType.WARNING);
      for (ApprovalQuestion.Choice c : q.choices()) {
        n.addAction(NotificationAction.createSimpleExpiring(c.label(), () -> answer.complete(c.decision())));
      }
      n.whenExpired(() -> answer.complete(null));
      withdrawn.onCancel(() -> ApplicationManager.getApplication().invokeLater(n::expire));
      n.notify(project);
    }, project.getDisposed());
    withdrawn.onCancel(() -> answer.complete(null));
    return answer;
  }
}
